/* formats.c - the registry of trace readers, in sniffing priority order. */
#include <string.h>

#include "trace/reader.h"

extern const struct atr_format atr_format_atr;
extern const struct atr_format atr_format_swe_agent;
extern const struct atr_format atr_format_mini_swe_agent;
extern const struct atr_format atr_format_openhands;
extern const struct atr_format atr_format_openai_chat;
extern const struct atr_format atr_format_mooncake;
extern const struct atr_format atr_format_azure;
extern const struct atr_format atr_format_burstgpt;
extern const struct atr_format atr_format_playwright;
extern const struct atr_format atr_format_browsergym;
extern const struct atr_format atr_format_otlp;

const struct atr_format *const atr_formats[] = {
    &atr_format_atr,
    &atr_format_swe_agent,
    &atr_format_mini_swe_agent,
    &atr_format_openhands,
    &atr_format_openai_chat,
    &atr_format_mooncake,
    &atr_format_azure,
    &atr_format_burstgpt,
    &atr_format_playwright,
    &atr_format_browsergym,
    &atr_format_otlp,
    NULL,
};

const struct atr_format *atr_format_find(const char *name)
{
    for (size_t i = 0; atr_formats[i]; i++)
        if (strcmp(atr_formats[i]->name, name) == 0)
            return atr_formats[i];
    return NULL;
}
