// tests/ref/render-templates.mjs — the reference side of tests/test-jinja.c's
// corpus test: every chat template in tests/data/chat-templates (129 real
// templates, see its README) rendered over a fixed set of
// conversations by @huggingface/jinja (pinned in package.json), printed as
// one JSON object:
//   { "templates": [ { "file", "cases": [ { "name", "vars", "expected" } |
//                                         { "name", "vars", "error" } ] } ] }
// "vars" is exactly what the template gets (messages, tools,
// add_generation_prompt, bos_token, eos_token). The clock is fixed at
// 2023-11-14 22:13:20 UTC (strftime_now), as the C side fixes it.
//
// Usage: node tests/ref/render-templates.mjs   (from the repository root or anywhere)
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Template } from '@huggingface/jinja';

const NOW = 1700000000000;
const RealDate = Date;
globalThis.Date = class extends RealDate {
    constructor(...a) { super(...(a.length ? a : [NOW])); }
    static now() { return NOW; }
};

const here = path.dirname(fileURLToPath(import.meta.url));
const dir = path.resolve(here, '../data/chat-templates');

const S = (content) => ({ role: 'system', content });
const U = (content) => ({ role: 'user', content });
const A = (content) => ({ role: 'assistant', content });
const weather = {
    type: 'function',
    function: {
        name: 'get_weather',
        description: 'Get the current weather in a city',
        parameters: { type: 'object', properties: { city: { type: 'string', description: 'The city' },
                                                    unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
                      required: ['city'] },
    },
};
const add = {
    type: 'function',
    function: { name: 'add', description: 'Add two integers',
                parameters: { type: 'object', properties: { a: { type: 'integer' }, b: { type: 'integer' } }, required: ['a', 'b'] } },
};
const call = { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: { city: 'Paris' } } };

const conversations = [
    { name: 'user', messages: [U('Hello!')], add_generation_prompt: true },
    { name: 'system + user', messages: [S('You are terse.'), U('What is 2+2?')], add_generation_prompt: true },
    { name: 'multi-turn, ends with assistant', messages: [S('Be brief.'), U('Name a colour.'), A('Blue.'), U('Another?'), A('Green.')],
      add_generation_prompt: false },
    { name: 'multi-turn without system', messages: [U('Hi'), A('Hello! How can I help?'), U('Tell me a joke.')], add_generation_prompt: true },
    { name: 'tools', messages: [S('You can call tools.'), U('Weather in Paris?')], tools: [weather, add], add_generation_prompt: true },
    { name: 'tool call and result',
      messages: [U('Weather in Paris?'), { role: 'assistant', content: '', tool_calls: [call] },
                 { role: 'tool', tool_call_id: 'call_1', name: 'get_weather', content: '{"temperature": 18}' }],
      tools: [weather], add_generation_prompt: true },
    { name: 'reasoning in history',
      messages: [U('2+2?'), { role: 'assistant', content: '4', reasoning_content: 'Two plus two is four.' }, U('3+3?')],
      add_generation_prompt: true },
    { name: 'unicode and whitespace', messages: [S('  Réponds\nbrièvement. '), U('\n  Héllo 你好 🌍\t\n')], add_generation_prompt: true },
];

const out = { templates: [] };
const files = [...fs.readdirSync(dir).filter((f) => f.endsWith('.jinja')),
               ...['chujiezheng', 'hfjs'].flatMap((sub) => fs.readdirSync(path.join(dir, sub)).filter((f) => f.endsWith('.jinja')).map((f) => sub + '/' + f))].sort();
for (const file of files) {
    const text = fs.readFileSync(path.join(dir, file), 'utf8');
    const t = { file, path: path.join(dir, file), cases: [] };
    let tmpl = null, compileError = null;
    try { tmpl = new Template(text); } catch (e) { compileError = String(e.message || e); }
    for (const c of conversations) {
        const vars = { messages: c.messages, add_generation_prompt: c.add_generation_prompt, bos_token: '<s>', eos_token: '</s>' };
        if (c.tools) vars.tools = c.tools;
        const k = { name: c.name, vars };
        if (compileError) k.error = compileError;
        else {
            try { k.expected = tmpl.render(vars); } catch (e) { k.error = String(e.message || e); }
        }
        t.cases.push(k);
    }
    out.templates.push(t);
}
process.stdout.write(JSON.stringify(out));
