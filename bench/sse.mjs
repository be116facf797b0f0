// bench/sse.mjs — one streamed /v1/completions request read as Server-Sent
// Events (sprig serve, llama-server), shared by the bench scripts. Node 18+.
//
// complete(url, body, onPiece, signal) posts body (stream: true is added),
// calls onPiece(text, ms since the start) for each piece of text, and
// returns { first, text, usage, timings }: the time to the first piece (ms),
// the whole text, and the last usage / timings objects seen (null if none).
// An aborted request returns what it had.
export async function complete(url, body, onPiece, signal) {
  const t0 = performance.now();
  const r = await fetch(url + '/v1/completions', {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, signal,
    body: JSON.stringify({ ...body, stream: true }),
  });
  if (!r.ok) throw new Error(`HTTP ${r.status}: ${await r.text()}`);
  const rd = r.body.getReader();
  const dec = new TextDecoder();
  let buf = '', first = null, text = '', usage = null, timings = null;
  try {
    for (;;) {
      const { value, done } = await rd.read();
      if (done) break;
      buf += dec.decode(value, { stream: true });
      let nl;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl).trim();
        buf = buf.slice(nl + 1);
        if (!line.startsWith('data: {')) continue;
        const j = JSON.parse(line.slice(6));
        const piece = j.choices?.[0]?.text ?? j.content ?? '';
        if (j.usage) usage = j.usage;
        if (j.timings) timings = j.timings;
        if (!piece) continue;
        const ms = performance.now() - t0;
        if (first === null) first = ms;
        text += piece;
        onPiece?.(piece, ms);
      }
    }
  } catch (e) {
    if (e.name !== 'AbortError') throw e;
  }
  return { first, text, usage, timings, total: performance.now() - t0 };
}
