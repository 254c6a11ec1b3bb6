// openai-client.mjs BASE_URL OUT.json - the official OpenAI Node SDK as a
// client of an OpenAI-compatible server (atr sim serve, atr proxy): chat and
// completions, streaming and not, and the model list. Writes what the SDK
// handed back, normalised so that two runs against equivalent servers give
// equal files (tests/cli/test-proxy-clients.sh compares a direct run with one
// through atr proxy). Exits 1 with a message on any SDK error.
//
// Normalisation: `created` (a wall-clock second) is dropped everywhere; `id`
// ("chatcmpl-7", "cmpl-7": a per-server counter, so it depends on how many
// requests the server saw before) keeps its prefix and loses its number, and
// each stream records whether all its chunks shared one id. Every other field
// is kept as received: sim serve's answers are deterministic.
import { writeFileSync } from 'node:fs';
import OpenAI from 'openai';

const [baseURL, outPath] = process.argv.slice(2);
if (!baseURL || !outPath || process.argv.length !== 4) {
    process.stderr.write('usage: node openai-client.mjs BASE_URL OUT.json\n');
    process.exit(2);
}

const client = new OpenAI({
    apiKey: 'sk-test',
    baseURL: baseURL.replace(/\/+$/, '') + '/v1',
    maxRetries: 0,        // a failure is a failure, not a second request
    timeout: 20 * 1000,
});

const MODEL = 'atr-sim';
const MESSAGES = [
    { role: 'system', content: 'You are terse.' },
    { role: 'user', content: 'Name three colours of the rainbow.' },
];
const PROMPT = 'Once upon a time, in a land far away,';

function normId(id) {
    return typeof id === 'string' ? id.replace(/[0-9]+$/, 'N') : id;
}

// A deep copy of a completion or chunk with `created` dropped and `id`
// normalised (both only at the top level, where the server puts them).
function norm(obj) {
    const o = JSON.parse(JSON.stringify(obj));
    delete o.created;
    if ('id' in o) o.id = normId(o.id);
    return o;
}

async function collect(stream) {
    const chunks = [];
    const ids = new Set();
    for await (const chunk of stream) {
        ids.add(chunk.id);
        chunks.push(norm(chunk));
    }
    const usage = chunks.filter((c) => c.usage);
    return {
        chunk_count: chunks.length,
        usage_chunk: usage.length > 0,
        usage_chunks: usage.length,
        one_id: ids.size === 1,
        chunks,
    };
}

const runs = [
    ['chat', () => client.chat.completions.create({
        model: MODEL, messages: MESSAGES, max_tokens: 8,
    }).then(norm)],
    ['chat_stream', async () => collect(await client.chat.completions.create({
        model: MODEL, messages: MESSAGES, max_tokens: 8, stream: true,
    }))],
    ['chat_stream_usage', async () => collect(await client.chat.completions.create({
        model: MODEL, messages: MESSAGES, max_tokens: 8, stream: true,
        stream_options: { include_usage: true },
    }))],
    ['completion', () => client.completions.create({
        model: MODEL, prompt: PROMPT, max_tokens: 8,
    }).then(norm)],
    ['completion_stream', async () => collect(await client.completions.create({
        model: MODEL, prompt: PROMPT, max_tokens: 8, stream: true,
    }))],
    ['models', async () => {
        const models = [];
        for await (const m of client.models.list()) {
            const c = JSON.parse(JSON.stringify(m));   // the id is the model's name: kept
            delete c.created;
            models.push(c);
        }
        return { data: models };
    }],
];

const out = {};
for (const [name, fn] of runs) {
    try {
        out[name] = await fn();
    } catch (err) {
        const status = err && err.status ? ` (HTTP ${err.status})` : '';
        process.stderr.write(`openai-client: ${name}: ${err && err.message ? err.message : err}${status}\n`);
        process.exit(1);
    }
}
writeFileSync(outPath, JSON.stringify(out, null, 2) + '\n');
