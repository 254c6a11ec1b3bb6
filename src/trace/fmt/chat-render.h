/* chat-render.h - chat messages as prompt text, for the agent-trajectory readers.
 *
 * Private to src/trace (the chat-style trajectory readers). A message's
 * text is its content (a string, or a list of {type, text} parts joined by
 * newlines) followed by one "name(arguments)" line per OpenAI tool call, so
 * a model call's reply and the same message replayed in later prompts are
 * the same bytes. Everything returned lives in the given arena. */
#ifndef ATR_TRACE_CHAT_RENDER_H
#define ATR_TRACE_CHAT_RENDER_H

#include <stddef.h>

#include "json/json.h"
#include "trace/reader.h"
#include "util/arena.h"

/* Renders content (string, array of parts, or NULL/null) and tool_calls
 * (an array or NULL) into a NUL-terminated arena string; *len gets its
 * length. Parts and calls of unexpected shapes contribute nothing. */
const char *atr_chat_render(struct atr_arena *a, const struct atr_json *content,
                            const struct atr_json *tool_calls, size_t *len);

/* Checks the shape every chat message shares: an object ("expected a
 * <what> object" otherwise) with a string "role" (stored in *role), content
 * a string or parts, tool_calls an array when present. Fails at the node. */
int atr_chat_check_msg(struct atr_reader *r, const struct atr_json *m, const char *what,
                       const char **role);

/* True when content is a type a chat message may carry: absent, null,
 * string, or array of parts. */
int atr_chat_content_ok(const struct atr_json *content);

/* The "name" and "arguments" of one OpenAI tool call
 * ({"function": {"name", "arguments"}}); arguments may be a JSON string or
 * an object. Returns 0 when the call has no function name. */
int atr_chat_tool_call(const struct atr_json *call, const char **name,
                       const struct atr_json **arguments);

/* An object, or a JSON string holding one (tool call arguments, SWE-agent's
 * "state" and replay_config), parsed into arena a with the depth cap; NULL
 * for other types and for strings that do not parse to an object. */
const struct atr_json *atr_chat_object(struct atr_arena *a, const struct atr_json *v,
                                       unsigned max_depth);

/* Sniffing aids: whether key (quotes included, e.g. "\"history\"") occurs
 * in head as an object key, i.e. followed by ':'; whether name ends with
 * suffix (name may be NULL). */
int atr_chat_has_key(const char *head, size_t len, const char *key);
int atr_chat_name_ends(const char *name, const char *suffix);

/* The base name of an input (directories and the given suffixes removed,
 * ".gz"/".zst" first), copied into arena a: "dir/x.traj.gz" -> "x".
 * suffixes is NULL-terminated and tried in order; "<stdin>" gives "stdin". */
const char *atr_chat_base_name(struct atr_arena *a, const char *name,
                               const char *const *suffixes);

/* SWE-agent's own file and search commands (open, goto, scroll_up, edit,
 * find_file, search_dir, submit, ...): they run as "editor" tool steps, not
 * shell commands. path says which word names the file (1 or 2), 0 none, -1
 * the open file; a 2 falls back to the open file when from_open. */
struct atr_swe_cmd {
    const char *name;
    int path;
    int from_open;
};
const struct atr_swe_cmd *atr_swe_cmd_find(const char *word);   /* NULL: a shell command */
const char *atr_swe_cmd_path(const struct atr_swe_cmd *c, const char *const *v, int n,
                             const char *open_file);

/* The first n (<= 8) shell words of a command's first line (a quoted word
 * may span lines), quotes and escapes removed, copied into arena a.
 * Returns how many there were. */
int atr_swe_split_words(struct atr_arena *a, const char *s, size_t len, const char **v, int n);

/* Editor steps as file operations (docs/trace-format.md, "file_op"): the
 * operation an editor action or sub-command performs (create, overwrite,
 * insert, replace, view), or NULL for those that touch no file the way a
 * replay could (undo_edit, find_file, search_dir, submit, ...). */
const char *atr_editor_file_op(const char *action);

/* Sets s->file_op from s->action and the sizes (bytes, no content) from the
 * str_replace_editor-style arguments args (may be NULL): file_text or
 * content (create, overwrite), new_str (insert, replace), old_str (replace),
 * or SWE-agent's edit {search, replace}. */
void atr_editor_sizes(struct atr_step *s, const struct atr_json *args);

/* Bytes of the text a SWE-agent `edit`, `insert` or `append` command line
 * writes: the lines after its first, up to its end_of_edit (end_of_insert,
 * ...) line. */
int64_t atr_swe_edit_bytes(const char *act, size_t len);

#endif
