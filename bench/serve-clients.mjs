// bench/serve-clients.mjs — C concurrent clients against an OpenAI-style
// /v1/completions endpoint (sprig serve or llama-server), each sending R
// greedy requests back to back (prompt i of a fixed list of story openings,
// N tokens each). Prints one JSON line: requests, completion tokens, wall
// seconds, aggregate tokens/s, and the texts' hash (so two engines' outputs
// can be compared; $TEXTS_OUT names a file for the texts themselves). Node 20 (global fetch), no dependencies.
//   node bench/serve-clients.mjs URL C R N
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';

const [url, C, R, N] = [process.argv[2], +process.argv[3], +process.argv[4], +process.argv[5]];
const prompts = [
  'Once upon a time', 'Lily wanted to play in the park', 'The little dog', 'Tom had a red ball',
  'One day, a bird', 'The sun was hot', 'Sam and Mia', 'There was a big tree',
];
const texts = new Array(C * R);
let tokens = 0, errors = 0;
async function client(c) {
  for (let r = 0; r < R; r++) {
    const k = c * R + r;
    const res = await fetch(url + '/v1/completions', {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ prompt: prompts[k % prompts.length], max_tokens: N, temperature: 0 }),
    });
    if (!res.ok) { errors++; continue; }
    const j = await res.json();
    tokens += j.usage.completion_tokens;
    texts[k] = j.choices[0].text;
  }
}
const t0 = performance.now();
await Promise.all(Array.from({ length: C }, (_, c) => client(c)));
const s = (performance.now() - t0) / 1000;
const hash = createHash('sha256').update(JSON.stringify(texts)).digest('hex').slice(0, 12);
if (process.env.TEXTS_OUT) writeFileSync(process.env.TEXTS_OUT, JSON.stringify(texts));
console.log(JSON.stringify({ requests: C * R, errors, tokens, seconds: +s.toFixed(3), tok_s: +(tokens / s).toFixed(2), texts: hash }));
