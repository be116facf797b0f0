// tests/ref/oracle-compare.mjs — hold sprig's greedy run (its --stats-json
// with --top-logprobs) against llama.cpp's (tests/ref/llamacpp-oracle.mjs)
// for tests/test-oracle-llamacpp.sh.
//
//   node tests/ref/oracle-compare.mjs SPRIG.json LLAMA.json --tol T [--near-ties] [--name NAME] [--top 5]
//
// Both files list, per generated token, the most likely candidates (id,
// logprob), best first, at least top + 1 of them. Rules, step by step:
//   1. tokens equal. A difference fails — unless --near-ties is given and
//      llama.cpp's own top-1/top-2 gap at that step is below T (the two
//      engines may then honestly pick different tokens): an exception,
//      reported. llama.cpp ran with --follow (it evaluated sprig's tokens),
//      so both engines' distributions stay on the same text and the
//      comparison goes on through every step.
//   2. every id in llama.cpp's top `top` that is also in sprig's list: the
//      two logprobs differ by at most T; an id missing from sprig's list
//      must be within T of sprig's last listed logprob (it could sit just
//      below the cut).
//   3. where llama.cpp's gap between its top-th and (top+1)-th candidate
//      exceeds T, the two sets of top `top` ids are equal.
//   4. --router LOG --router-tol R (mixture-of-experts rows): LOG is sprig's
//      stderr at SPRIG_LOG=debug, whose k-th "moe: forward ... margin M" line
//      is the smallest routing margin p_K - p_(K+1) over the layers of the
//      row that made step k. A step with M below R is a routing near tie:
//      the engines may send that token to different experts, so its token
//      and logprob differences are excused and reported, as near ties are.
//      (A flip in an earlier layer also reaches later steps through the
//      cache; those steps are still held to T.)
// Prints one line: steps matched, the largest |Δ logprob|, the smallest
// top-1/top-2 margin llama.cpp showed over the compared steps (where it
// was), and the verdict; exit 0 / 1, 2 on bad usage or unreadable input.
import { readFileSync } from "node:fs";

const die = (code, msg) => { console.error(`oracle-compare: ${msg}`); process.exit(code); };
const args = process.argv.slice(2);
const pos = [];
let tol = NaN, nearTies = false, name = "case", top = 5, routerLog = null, routerTol = 0;
for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === "--tol") tol = Number(args[++i]);
    else if (a === "--near-ties") nearTies = true;
    else if (a === "--name") name = args[++i];
    else if (a === "--top") top = Number(args[++i]);
    else if (a === "--router") routerLog = args[++i];
    else if (a === "--router-tol") routerTol = Number(args[++i]);
    else if (a.startsWith("-")) die(2, `unknown option '${a}'`);
    else pos.push(a);
}
if (pos.length !== 2 || !(tol >= 0) || !(top >= 1))
    die(2, "usage: node tests/ref/oracle-compare.mjs SPRIG.json LLAMA.json --tol T [--near-ties] [--name NAME] [--top K]");
const load = (f) => { try { return JSON.parse(readFileSync(f, "utf8")); } catch (e) { die(2, `${f}: ${e.message}`); } };
const S = load(pos[0]), L = load(pos[1]);
for (const [f, d] of [[pos[0], S], [pos[1], L]]) {
    if (!Array.isArray(d.tokens) || !Array.isArray(d.top_logprobs) || d.top_logprobs.length !== d.tokens.length)
        die(2, `${f}: needs "tokens" and one "top_logprobs" row per token`);
    if (d.top_logprobs.some((r) => r.length < top + 1)) die(2, `${f}: fewer than ${top + 1} candidates in a row`);
}
if (S.tokens.length !== L.tokens.length) die(1, `${name}: sprig made ${S.tokens.length} tokens, llama.cpp ${L.tokens.length}`);

const n = L.tokens.length;
let margins = [];
if (routerLog) {
    let text = "";
    try { text = readFileSync(routerLog, "utf8"); } catch (e) { die(2, `${routerLog}: ${e.message}`); }
    margins = [...text.matchAll(/moe: forward of \d+ rows: the last row's smallest router margin ([-0-9.e+]+)/g)].map((m) => Number(m[1]));
    if (margins.length < n) die(2, `${routerLog}: ${margins.length} router margins for ${n} steps (run sprig with SPRIG_LOG=debug)`);
}
const routed = [];   /* steps excused as routing near ties, with what differed there */
const problems = [];
let matched = 0, maxDelta = 0, maxAt = -1, minMargin = Infinity, minAt = -1;
const exceptions = [];
for (let i = 0; i < n; i++) {
    const sr = S.top_logprobs[i], lr = L.top_logprobs[i];
    const margin = lr[0].logprob - lr[1].logprob;
    if (margin < minMargin) { minMargin = margin; minAt = i; }
    const routerTie = routerLog && margins[i] < routerTol;
    const before = problems.length;
    if (S.tokens[i] !== L.tokens[i]) {
        const what = `step ${i}: sprig ${S.tokens[i]}, llama.cpp ${L.tokens[i]} (llama.cpp's top-1/top-2 gap ${margin.toExponential(2)})`;
        if (routerTie) {
            routed.push(`${i} (router margin ${margins[i].toExponential(2)}, tokens differ)`);
            continue;
        }
        if (!(nearTies && margin < tol)) {
            problems.push(`token differs at ${what}`);
            break;
        }
        exceptions.push(what);
    } else {
        matched++;
    }
    const sById = new Map(sr.map((e) => [e.id, e.logprob]));
    const sLast = sr[sr.length - 1].logprob;
    for (const e of lr.slice(0, top)) {
        if (sById.has(e.id)) {
            const d = Math.abs(sById.get(e.id) - e.logprob);
            if (d > maxDelta) { maxDelta = d; maxAt = i; }
            if (d > tol) problems.push(`step ${i}: id ${e.id} logprob sprig ${sById.get(e.id)} llama.cpp ${e.logprob} (|Δ| ${d.toExponential(2)} > ${tol})`);
        } else if (e.logprob > sLast + tol) {
            problems.push(`step ${i}: llama.cpp's candidate ${e.id} (${e.logprob}) is missing from sprig's list, whose last is ${sLast}`);
        }
    }
    if (lr[top - 1].logprob - lr[top].logprob > tol) {
        const a = sr.slice(0, top).map((e) => e.id).sort((x, y) => x - y).join(",");
        const b = lr.slice(0, top).map((e) => e.id).sort((x, y) => x - y).join(",");
        if (a !== b) problems.push(`step ${i}: top-${top} sets differ: sprig {${a}}, llama.cpp {${b}}`);
    }
    if (routerTie && problems.length > before) {   /* the routing near tie explains this step */
        routed.push(`${i} (router margin ${margins[i].toExponential(2)}: ${problems.slice(before).length} difference(s))`);
        problems.length = before;
    }
    if (problems.length) break;
}
const line = `${name}: ${matched}/${n} tokens equal, max |Δ logprob| ${maxDelta.toExponential(2)}` +
    (maxAt >= 0 ? ` (step ${maxAt})` : "") + ` tol ${tol}, min llama.cpp top-1/top-2 margin ${minMargin.toExponential(2)} (step ${minAt})`;
if (problems.length) {
    console.log(`${line}: FAIL`);
    for (const p of problems.slice(0, 5)) console.log(`  ${p}`);
    process.exit(1);
}
const rt = routed.length ? `, ROUTING: ${routed.length} step(s) excused as router near ties below ${routerTol}: ${routed.join(", ")}` : "";
console.log(exceptions.length
    ? `${line}: ok, EXCEPTION: ${exceptions.length} near tie(s), the first at ${exceptions[0]}; logprobs compared at every step on sprig's text${rt}`
    : `${line}: ok${rt}`);
