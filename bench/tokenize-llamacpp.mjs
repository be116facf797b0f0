// bench/tokenize-llamacpp.mjs — llama.cpp's tokenizer speed on a text file,
// through node-llama-cpp (the reference pinned in bench/ref/package.json),
// for the side-by-side comparison in bench/tokenize-compare.sh.
//
//   node bench/tokenize-llamacpp.mjs VOCAB.gguf TEXT_FILE [--reps R]
//        [--parse-special] [--ids-out FILE] [--diff-with IDS_FILE]
//
// Loads the GGUF with vocabOnly (no weights), reads the file as UTF-8, and
// times only the tokenize call: one discarded warm-up, then R repetitions,
// median. node-llama-cpp's tokenize() is common_tokenize(vocab, text,
// add_special = false, parse_special), so no BOS is added — the same as
// `sprig bench tokenize` without --bos. The timed call includes the binding's
// copy of the JS string to UTF-8 and of the ids to a Uint32Array (a few ms
// per MB; small next to tokenizing). Decode (detokenize) is timed the same
// way. --diff-with compares the ids with another tool's (space-separated)
// and reports the first difference: token index, byte offset in the text
// and the text around it. Prints one JSON object. The package is found in $SPRIG_LLAMACPP_REF
// (a node_modules folder), default bench/ref/node_modules.
import { readFileSync, writeFileSync } from "node:fs";
import { resolve, join, dirname } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const args = process.argv.slice(2);
let reps = 5, parseSpecial = false, idsOut = null, diffWith = null;
const pos = [];
for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === "--reps") reps = parseInt(args[++i], 10);
    else if (a === "--parse-special") parseSpecial = true;
    else if (a === "--ids-out") idsOut = args[++i];
    else if (a === "--diff-with") diffWith = args[++i];
    else if (a.startsWith("-")) { console.error(`tokenize-llamacpp: unknown option '${a}'`); process.exit(2); }
    else pos.push(a);
}
if (pos.length !== 2 || !(reps >= 1)) {
    console.error("usage: node bench/tokenize-llamacpp.mjs VOCAB.gguf TEXT_FILE [--reps R] [--parse-special] [--ids-out FILE]");
    process.exit(2);
}
const [vocabPath, textPath] = pos;
const here = dirname(fileURLToPath(import.meta.url));
const ref = process.env.SPRIG_LLAMACPP_REF || join(here, "ref", "node_modules");
const entry = join(ref, "node-llama-cpp", "dist", "index.js");
let getLlama, pkgVersion = "?";
try {
    ({ getLlama } = await import(pathToFileURL(entry).href));
    pkgVersion = JSON.parse(readFileSync(join(ref, "node-llama-cpp", "package.json"), "utf8")).version;
} catch (e) {
    console.error(`tokenize-llamacpp: cannot load node-llama-cpp from ${ref} (${e.message}); see bench/ref/package.json`);
    process.exit(1);
}

const bytes = readFileSync(textPath);
const text = bytes.toString("utf8");
const llama = await getLlama({ gpu: false, build: "never", logLevel: "error" });
const model = await llama.loadModel({ modelPath: resolve(vocabPath), vocabOnly: true });

const median = (v) => { const s = [...v].sort((x, y) => x - y); const n = s.length; return n % 2 ? s[n >> 1] : (s[n / 2 - 1] + s[n / 2]) / 2; };
const ms = (t0) => Number(process.hrtime.bigint() - t0) / 1e6;

let t0 = process.hrtime.bigint();
let ids = model.tokenize(text, parseSpecial);
const firstMs = ms(t0);
const enc = [];
for (let r = 0; r < reps; r++) {
    t0 = process.hrtime.bigint();
    const got = model.tokenize(text, parseSpecial);
    enc.push(ms(t0));
    if (got.length !== ids.length) { console.error("tokenize-llamacpp: token count changed between runs"); process.exit(1); }
}
const dec = [];
let back = "";
for (let r = -1; r < reps; r++) {
    t0 = process.hrtime.bigint();
    back = model.detokenize(ids, false);
    if (r >= 0) dec.push(ms(t0));
}
if (idsOut) writeFileSync(idsOut, ids.join(" ") + "\n");
let diff = null;
if (diffWith) {
    const other = readFileSync(diffWith, "utf8").trim().split(/\s+/).filter((x) => x.length).map(Number);
    let i = 0;
    while (i < ids.length && i < other.length && ids[i] === other[i]) i++;
    if (i < ids.length || i < other.length) {
        const at = Buffer.byteLength(model.detokenize(ids.slice(0, i), true), "utf8");
        const lo = Math.max(0, at - 40);
        diff = { index: i, byte: at, other_count: other.length, other_ids: other.slice(i, i + 6), ids: ids.slice(i, i + 6),
                 context: bytes.subarray(lo, at + 40).toString("utf8"), context_from_byte: lo };
    }
}
const eMs = median(enc), dMs = median(dec);
const outBytes = Buffer.byteLength(back, "utf8");
console.log(JSON.stringify({
    bench: "tokenize", tool: "llama.cpp", binding: `node-llama-cpp ${pkgVersion}`, vocab: vocabPath, text: textPath,
    bytes: bytes.length, tokens: ids.length, reps, parse_special: parseSpecial, threads: 1,
    first_ms: +firstMs.toFixed(3), encode_ms_median: +eMs.toFixed(3), tok_s: +(ids.length / (eMs / 1e3)).toFixed(1),
    mb_s: +(bytes.length / 1e6 / (eMs / 1e3)).toFixed(3), decode_ms_median: +dMs.toFixed(3),
    decode_tok_s: +(ids.length / (dMs / 1e3)).toFixed(1), decode_mb_s: +(outBytes / 1e6 / (dMs / 1e3)).toFixed(3),
    ...(diffWith ? { same_ids: diff === null, first_diff: diff } : {}),
}));
await model.dispose();
await llama.dispose();
