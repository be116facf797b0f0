// tests/ref/openai-tools.mjs — the official OpenAI JavaScript client (npm
// `openai`, pinned) against `sprig serve` on loopback: tool calls and
// structured output. The server runs a tiny story model with Qwen 2.5's
// chat template (tool calls as <tool_call>{json}</tool_call>), so what it
// says is the grammar's doing: a named tool and "required" force a call
// whose arguments fit the tool's schema; response_format json_schema /
// json_object force JSON. Prints one JSON object of what it saw;
// tests/test-cli-serve.sh checks it.
//   node tests/ref/openai-tools.mjs BASE_URL MODEL_ID
import OpenAI from 'openai';

const [base, model] = process.argv.slice(2);
const client = new OpenAI({ baseURL: base, apiKey: 'none', maxRetries: 0, timeout: 60000 });
const tools = [
    { type: 'function', function: { name: 'get_weather', description: 'Weather in a city',
      parameters: { type: 'object', properties: { city: { type: 'string', maxLength: 16 }, days: { type: 'integer', minimum: 0 } }, required: ['city', 'days'] } } },
    { type: 'function', function: { name: 'add', description: 'Add two numbers',
      parameters: { type: 'object', properties: { a: { type: 'integer' }, b: { type: 'integer' } }, required: ['a', 'b'] } } },
];
const messages = [{ role: 'user', content: 'What is the weather in Paris for the next 3 days?' }];
const out = {};

// a named tool, not streamed
const named = await client.chat.completions.create({ model, messages, tools, tool_choice: { type: 'function', function: { name: 'get_weather' } },
                                                     max_tokens: 120, temperature: 0 });
const nc = named.choices[0];
out.named = { finish: nc.finish_reason, calls: nc.message.tool_calls, content: nc.message.content };

// required, one call, streamed: the deltas put back together
const stream = await client.chat.completions.create({ model, messages, tools, tool_choice: 'required', parallel_tool_calls: false,
                                                      max_tokens: 120, temperature: 0, stream: true });
const acc = [];
let finish = null;
for await (const chunk of stream) {
    const d = chunk.choices[0]?.delta;
    for (const tc of d?.tool_calls ?? []) {
        acc[tc.index] ??= { id: '', type: 'function', function: { name: '', arguments: '' } };
        if (tc.id) acc[tc.index].id = tc.id;
        if (tc.function?.name) acc[tc.index].function.name += tc.function.name;
        if (tc.function?.arguments) acc[tc.index].function.arguments += tc.function.arguments;
    }
    if (chunk.choices[0]?.finish_reason) finish = chunk.choices[0].finish_reason;
}
out.streamed = { finish, calls: acc };
const once = await client.chat.completions.create({ model, messages, tools, tool_choice: 'required', parallel_tool_calls: false,
                                                    max_tokens: 120, temperature: 0 });
out.required = { finish: once.choices[0].finish_reason, calls: once.choices[0].message.tool_calls };

// the call and its result sent back: the conversation goes on
const call = nc.message.tool_calls[0];
const back = await client.chat.completions.create({ model, tools, max_tokens: 8, temperature: 0,
    messages: [...messages, { role: 'assistant', content: null, tool_calls: [call] }, { role: 'tool', tool_call_id: call.id, content: '{"temp": 18}' }] });
out.followup = { finish: back.choices[0].finish_reason, role: back.choices[0].message.role };

// structured output
const person = { type: 'object', properties: { name: { type: 'string', maxLength: 12 }, age: { type: 'integer', minimum: 0 },
                                               pets: { type: 'array', items: { enum: ['cat', 'dog'] }, maxItems: 2 } }, required: ['name', 'age'] };
const js = await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'Describe a person.' }], max_tokens: 80, temperature: 0,
                                                  response_format: { type: 'json_schema', json_schema: { name: 'person', schema: person, strict: true } } });
out.json_schema = { finish: js.choices[0].finish_reason, content: js.choices[0].message.content };
const jo = await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'Some JSON, please.' }], max_tokens: 60, temperature: 0,
                                                  response_format: { type: 'json_object' } });
out.json_object = { finish: jo.choices[0].finish_reason, content: jo.choices[0].message.content };
try {
    await client.chat.completions.create({ model, messages, max_tokens: 8,
        response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object', properties: { d: { type: 'string', pattern: 'a+' } } } } } });
    out.bad_schema = { status: 0 };
} catch (e) {
    out.bad_schema = { status: e.status, param: e.param ?? e.error?.param ?? null, message: e.message };
}
process.stdout.write(JSON.stringify(out));
