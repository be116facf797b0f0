// bench/prefix-cache.mjs — time to first token with and without the prompt
// cache, against any OpenAI-style /v1/completions server (sprig serve,
// llama-server). Node 18+, no packages. Prints one JSON line.
//
//   node bench/prefix-cache.mjs URL chat   CACHE TAG [TURNS=10] [WORDS=200]
//       a conversation: turn k's prompt is turn k-1's prompt, its reply and
//       about WORDS new tokens; reports every turn's TTFT and cached tokens.
//   node bench/prefix-cache.mjs URL shared CACHE TAG [N=8] [SYSTEM=2000]
//       N requests at once, each a shared system prompt of about SYSTEM
//       tokens and a question of its own; reports each one's TTFT, the
//       last one's, and the prompt tokens computed (prompt - cached).
//
// CACHE is true or false (the request's cache_prompt). TAG starts every
// prompt, so runs never find each other's prompts in the cache.
import { complete as sse } from './sse.mjs';

const [url, mode, cacheArg, tag, a1, a2] = process.argv.slice(2);
if (!url || !mode || !cacheArg || !tag) {
  console.error('usage: node prefix-cache.mjs URL chat|shared true|false TAG [...]');
  process.exit(2);
}
const cache = cacheArg === 'true';

async function complete(prompt, maxTokens) {
  const r = await sse(url, { prompt, max_tokens: maxTokens, temperature: 0, cache_prompt: cache, stream_options: { include_usage: true } });
  const prompt_tokens = r.usage?.prompt_tokens ?? r.timings?.prompt_n + (r.timings?.cache_n ?? 0);
  const cached = r.usage?.prompt_tokens_details?.cached_tokens ?? r.timings?.cache_n ?? 0;
  return { ttft: r.first ?? r.total, text: r.text, prompt_tokens, cached };
}

// about n tokens of text that no tokenizer merges across items
const per_item = (seed) => (seed.startsWith("t") ? 5 : 4);   // tokens per item on Llama 3 / Qwen vocabularies
const words = (seed, n) => Array.from({ length: Math.ceil(n / per_item(seed)) }, (_, i) => `${seed} ${i},`).join(' ');

if (mode === 'chat') {
  const turns = +(a1 ?? 10), per = +(a2 ?? 200);
  let prompt = `${tag}. A conversation.\n`;
  const rows = [];
  for (let k = 1; k <= turns; k++) {
    prompt += words(`t${k}`, per) + '\n';
    const r = await complete(prompt, 8);
    rows.push({ turn: k, ttft_ms: +r.ttft.toFixed(1), prompt_tokens: r.prompt_tokens, cached: r.cached });
    prompt += r.text;
  }
  console.log(JSON.stringify({ mode, cache, tag, turns: rows, last_ttft_ms: rows[rows.length - 1].ttft_ms }));
} else if (mode === 'shared') {
  const n = +(a1 ?? 8), sys = +(a2 ?? 2000);
  const system = `${tag}. You are a helpful assistant. ` + words('rule', sys) + '\n';
  const t0 = performance.now();
  const rs = await Promise.all(Array.from({ length: n }, (_, i) =>
    complete(system + `Question ${i}: what is ${i * 7 + 3} plus ${i + 11}?`, 4).then((r) => ({ ...r, end: performance.now() - t0 }))));
  const computed = rs.reduce((s, r) => s + r.prompt_tokens - r.cached, 0);
  const prompt_tokens = rs.reduce((s, r) => s + r.prompt_tokens, 0);
  console.log(JSON.stringify({
    mode, cache, tag, n, ttft_ms: rs.map((r) => +r.ttft.toFixed(1)), last_ttft_ms: +Math.max(...rs.map((r) => r.ttft)).toFixed(1),
    prompt_tokens, computed, cached: rs.map((r) => r.cached),
  }));
} else {
  console.error(`unknown mode ${mode}`);
  process.exit(2);
}
