// tests/ref/llamacpp-oracle.mjs — llama.cpp's greedy decoding of a GGUF from
// given prompt ids, with the most likely next tokens at every step: the
// reference tests/test-oracle-llamacpp.sh holds sprig's `run --temp 0
// --top-logprobs` against.
//
//   node tests/ref/llamacpp-oracle.mjs MODEL.gguf --prompt 1,403,407 [-n 128] [-t 2] [--top 5]
//        [--follow 29,871,...] [--kv F32|F16|Q8_0|Q4_0] [--flash] [--grammar FILE.gbnf]
//
// --grammar FILE: decode under this GBNF grammar (llama.cpp's grammar
// sampler before the greedy one), stopping at the first end-of-generation
// token (not with --follow); `tokens` may then be fewer than n.
// llama.cpp is node-llama-cpp's prebuilt CPU binary (pinned in
// tests/ref/package.json), loaded with no GPU and never built or downloaded.
// It is fed the ids as given — nothing is tokenized here, so the two
// engines' tokenizers cannot make the comparison differ. Decoding is greedy
// (temperature 0: llama.cpp's greedy sampler alone, first maximum), EOG
// tokens are yielded and decoding goes on through them (sprig's
// --ignore-eos), for exactly n steps.
//
// --follow IDS: after step i, evaluate IDS[i] (another engine's token)
// instead of llama.cpp's own choice, so every step's distribution is
// llama.cpp's on the SAME text as that engine's; `tokens` still lists
// llama.cpp's own greedy choice at each step. Where the choices agree at
// every step this is exactly free-running greedy decoding.
//
// Configuration, chosen to compute what sprig computes as closely as
// llama.cpp can: KV cache in F32 (sprig's default; llama.cpp's default F16
// would round every K and V), no flash attention (the plain soft-max path),
// one sequence, a context just large enough (no context shift can happen).
// --kv TYPE stores K and V in another ggml type (a quantized V needs
// --flash, flash attention): bench/kv-agree-llamacpp.sh measures how often
// llama.cpp's greedy choice with a quantized cache stays that of F32.
//
// Output: one JSON object {tokens: [n], top_logprobs: [n][top] of {id,
// logprob}, llama_cpp: version facts}. node-llama-cpp returns the greedy
// step's probabilities as llama.cpp's float soft-max of the raw logits
// (sorted by logit); a logprob here is the natural log of that probability.
// The package is found in $SPRIG_LLAMACPP_REF (a node_modules folder),
// default tests/ref/node_modules.
import { readFileSync } from "node:fs";
import { resolve, join, dirname } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const die = (code, msg) => { console.error(`llamacpp-oracle: ${msg}`); process.exit(code); };
const args = process.argv.slice(2);
let model = null, prompt = null, follow = null, nSteps = 128, threads = 2, top = 5, kvType = "F32", flash = false, grammarFile = null;
const int = (flag, v, lo, hi) => {
    const x = Number(v);
    if (!Number.isInteger(x) || x < lo || x > hi) die(2, `${flag}: '${v}' is not an integer in [${lo}, ${hi}]`);
    return x;
};
for (let i = 0; i < args.length; i++) {
    const a = args[i], v = args[i + 1];
    if (a === "--prompt") { prompt = (v ?? "").split(",").filter((s) => s.length).map((s) => int("--prompt", s, 0, 1 << 30)); i++; }
    else if (a === "--follow") { follow = (v ?? "").split(",").filter((s) => s.length).map((s) => int("--follow", s, 0, 1 << 30)); i++; }
    else if (a === "-n") { nSteps = int(a, v, 1, 1 << 16); i++; }
    else if (a === "-t") { threads = int(a, v, 1, 256); i++; }
    else if (a === "--top") { top = int(a, v, 1, 100); i++; }
    else if (a === "--kv") {
        if (!["F32", "F16", "Q8_0", "Q4_0"].includes(v)) die(2, `--kv: '${v}' is not F32, F16, Q8_0 or Q4_0`);
        kvType = v;
        i++;
    }
    else if (a === "--flash") flash = true;
    else if (a === "--grammar") { grammarFile = v; i++; }
    else if (a.startsWith("-")) die(2, `unknown option '${a}'`);
    else if (model === null) model = a;
    else die(2, `unexpected argument '${a}'`);
}
if (model === null || !prompt || prompt.length === 0)
    die(2, "usage: node tests/ref/llamacpp-oracle.mjs MODEL.gguf --prompt ID,ID,... [-n N] [-t THREADS] [--top K]");

const here = dirname(fileURLToPath(import.meta.url));
const ref = process.env.SPRIG_LLAMACPP_REF || join(here, "node_modules");
let getLlama, LlamaGrammarEvaluationState, pkgVersion;
try {
    ({ getLlama, LlamaGrammarEvaluationState } = await import(pathToFileURL(join(ref, "node-llama-cpp", "dist", "index.js")).href));
    pkgVersion = JSON.parse(readFileSync(join(ref, "node-llama-cpp", "package.json"), "utf8")).version;
} catch (e) {
    die(3, `cannot load node-llama-cpp from ${ref} (${e.message}); npm ci --omit=optional in tests/ref`);
}

const llama = await getLlama({ gpu: false, build: "never", logLevel: "error" });
let m;
try {
    m = await llama.loadModel({ modelPath: resolve(model), gpuLayers: 0 });
} catch (e) {
    die(1, `${model}: llama.cpp cannot load it (${e.message}; its reason is in the log above)`);
}
const nVocab = m.tokens.vocabSize ?? m.fileInsights?.tokens?.vocabSize;
for (const [i, id] of prompt.entries())
    if (nVocab !== undefined && id >= nVocab) die(1, `${model}: prompt id ${id} (index ${i}) is outside the vocabulary of ${nVocab}`);
const ctx = await m.createContext({
    contextSize: prompt.length + nSteps + 8,
    batchSize: Math.max(prompt.length, 8),
    sequences: 1,
    threads,
    flashAttention: flash,
    experimentalKvCacheKeyType: kvType,
    experimentalKvCacheValueType: kvType,
});
const seq = ctx.getSequence();
const tokens = [], tops = [];
if (follow && follow.length < nSteps - 1) die(2, `--follow: ${follow.length} ids for ${nSteps} steps`);
for (const [i, id] of (follow ?? []).entries())
    if (nVocab !== undefined && id >= nVocab) die(1, `${model}: --follow id ${id} (index ${i}) is outside the vocabulary of ${nVocab}`);
if (grammarFile && follow) die(2, "--grammar and --follow: give one");
const grammar = grammarFile ? await llama.createGrammar({ grammar: readFileSync(grammarFile, "utf8") }) : null;
const grammarEvaluationState = grammar ? new LlamaGrammarEvaluationState({ model: m, grammar }) : undefined;
const gen = seq.evaluateWithMetadata(prompt, { probabilities: true }, { temperature: 0, yieldEogToken: true, grammarEvaluationState });
for (let r = await gen.next(); !r.done; ) {
    const step = r.value;
    tokens.push(step.token);
    const row = [];
    for (const [id, p] of step.probabilities) {
        if (row.length === top) break;
        row.push({ id, logprob: p > 0 ? Math.log(p) : null });
    }
    tops.push(row);
    if (tokens.length === nSteps || (grammar && m.isEogToken(step.token))) break;
    /* the next token evaluated: the followed engine's, else llama.cpp's own */
    r = await gen.next(follow ? follow[tokens.length - 1] : undefined);
}
await gen.return?.();
if (tokens.length !== nSteps && !grammar) die(1, `${model}: llama.cpp stopped after ${tokens.length} of ${nSteps} steps`);
process.stdout.write(JSON.stringify({
    tokens, top_logprobs: tops,
    llama_cpp: { package: `node-llama-cpp@${pkgVersion}`, build: llama.buildType, threads: ctx.currentThreads ?? threads },
}) + "\n");
await ctx.dispose();
await m.dispose();
await llama.dispose();
