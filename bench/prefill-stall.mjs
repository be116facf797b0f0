// bench/prefill-stall.mjs — what a long prompt's prefill does to the streams
// already running on a server (sprig serve --parallel N, or llama-server
// -np N). Node 18+, no packages. Prints one JSON line.
//
//   node bench/prefill-stall.mjs URL [STREAMS=3] [PROMPT=4000] [TAG=x]
//
// 1. The long prompt alone (the server idle): its time to first token.
// 2. STREAMS greedy completions of at most 3000 tokens (they must outlast the prefill), and once
//    every stream has run 4 s, the long prompt again: the streams' gaps
//    between events before it (the baseline) and while it is prefilled, as
//    p50/p99, and its own time to first token meanwhile.
// Every prompt starts with TAG, so no cache holds it.
import { complete as sse } from './sse.mjs';

const [url, nsArg, npArg, tagArg] = process.argv.slice(2);
if (!url) { console.error('usage: node prefill-stall.mjs URL [STREAMS] [PROMPT] [TAG]'); process.exit(2); }
const ns = +(nsArg ?? 3), np = +(npArg ?? 4000), tag = tagArg ?? `x${Date.now()}`;

async function stream(prompt, maxTokens, onEvent, signal) {
  const r = await sse(url, { prompt, max_tokens: maxTokens, temperature: 0, cache_prompt: false },
                      onEvent && ((_, ms) => onEvent(performance.now())), signal);
  return r.first;
}

const long = (k) => `${tag} ${k}. ` + Array.from({ length: Math.ceil(np / 4) }, (_, i) => `rule ${i},`).join(' ') + '\nAnswer:';
const pct = (a, p) => { const s = [...a].sort((x, y) => x - y); return s.length ? s[Math.min(s.length - 1, Math.floor(p * s.length))] : NaN; };

const alone = await stream(long('alone'), 1);
const ctl = new AbortController();
const events = Array.from({ length: ns }, () => []);
const runs = events.map((ev, i) => stream(`${tag} stream ${i}. Once upon a time`, 3000, (t) => ev.push(t), ctl.signal).catch((e) => { console.error(`stream ${i}: ${e.message}`); process.exit(1); }));
while (events.some((ev) => ev.length < 2 || ev[ev.length - 1] - ev[0] < 4000)) await new Promise((r) => setTimeout(r, 50));
const t0 = performance.now();
const during = await stream(long('during'), 1);
const t1 = t0 + during;
await new Promise((r) => setTimeout(r, 500));
ctl.abort();
await Promise.all(runs);
const gaps = (from, to) => events.flatMap((ev) => ev.slice(1).map((t, k) => [ev[k], t]).filter(([a, b]) => b > from && a < to).map(([a, b]) => b - a));
const before = gaps(t0 - 4000, t0), inside = gaps(t0, t1);
console.log(JSON.stringify({
  tag, streams: ns, prompt_words: np, alone_ttft_ms: +alone.toFixed(1), during_ttft_ms: +during.toFixed(1),
  prefill_ratio: +(during / alone).toFixed(3),
  gap_before_ms: { p50: +pct(before, 0.5).toFixed(1), p99: +pct(before, 0.99).toFixed(1), n: before.length },
  gap_during_ms: { p50: +pct(inside, 0.5).toFixed(1), p99: +pct(inside, 0.99).toFixed(1), max: +Math.max(...inside).toFixed(1), n: inside.length },
  p99_ratio: +(pct(inside, 0.99) / pct(before, 0.99)).toFixed(2),
}));
