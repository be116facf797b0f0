// tests/ref/page-browser.mjs — the page `sprig serve` answers at `/`, in a
// real headless browser (Debian's Chromium, driven by puppeteer-core,
// pinned in package.json): type a message, send it, wait for the streamed
// reply, and read back the reply text and the drawn speculation tree.
// Prints one JSON object; tests/test-cli-serve.sh checks it.
//   node tests/ref/page-browser.mjs BASE_URL CHROMIUM MESSAGE
import puppeteer from 'puppeteer-core';

const [base, executablePath, message] = process.argv.slice(2);
const browser = await puppeteer.launch({
  executablePath, headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run', '--disable-extensions'],
});
try {
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(base + '/', { waitUntil: 'load', timeout: 30000 });
  await page.type('#input', message);
  await page.click('#send');
  await page.waitForSelector('.msg.assistant[data-done="1"]', { timeout: 60000 });
  const out = await page.evaluate(() => ({
    user: document.querySelector('.msg.user')?.textContent ?? null,
    reply: document.querySelector('.msg.assistant')?.textContent ?? null,
    nodes: document.querySelectorAll('#tree g.node').length,
    accepted: document.querySelectorAll('#tree g.node.accepted').length,
    stats: document.getElementById('stats').textContent,
  }));
  out.errors = errors;
  process.stdout.write(JSON.stringify(out));
} finally {
  await browser.close();
}
