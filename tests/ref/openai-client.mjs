// tests/ref/openai-client.mjs — the official OpenAI JavaScript client
// (npm `openai`, pinned in package.json) against `sprig serve` on loopback:
// models, completions and chat, plain and streamed, and an error. Prints
// one JSON object of what it saw; tests/test-cli-serve.sh checks it.
//   node tests/ref/openai-client.mjs BASE_URL API_KEY MODEL_ID
import OpenAI from 'openai';

const [base, apiKey, model] = process.argv.slice(2);
const client = new OpenAI({ baseURL: base, apiKey, maxRetries: 0, timeout: 60000 });
const out = {};
const models = await client.models.list();
out.models = models.data.map((m) => m.id);
const c = await client.completions.create({ model, prompt: 'Once upon a time', max_tokens: 48, temperature: 0 });
out.completion = c.choices[0].text;
out.completion_usage = c.usage;
let streamed = '';
const cs = await client.completions.create({ model, prompt: 'Once upon a time', max_tokens: 48, temperature: 0, stream: true });
for await (const chunk of cs) streamed += chunk.choices[0]?.text ?? '';
out.completion_stream = streamed;
const messages = [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Tell me a story.' }];
const ch = await client.chat.completions.create({ model, messages, max_tokens: 16, temperature: 0 });
out.chat = ch.choices[0].message.content;
out.chat_role = ch.choices[0].message.role;
out.chat_finish = ch.choices[0].finish_reason;
let chatStreamed = '';
const chs = await client.chat.completions.create({ model, messages, max_tokens: 16, temperature: 0, stream: true });
for await (const chunk of chs) chatStreamed += chunk.choices[0]?.delta?.content ?? '';
out.chat_stream = chatStreamed;
try {
  await client.completions.create({ model, prompt: 'x', max_tokens: -1 });
  out.error_status = 0;
} catch (e) {
  out.error_status = e.status;
  out.error_param = e.param ?? e.error?.param ?? null;
}
process.stdout.write(JSON.stringify(out));
