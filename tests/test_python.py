"""tests/test_python.py — the Python module (bindings/python/sprig.py) against
the library and the sprig command: run by tests/test-python.sh with Debian's
python3, the module loading build/libsprig.so.

Checks: the ctypes structures have the C compiler's sizes and offsets (a
generated C file prints them); the version and build info match `sprig
--version`; tokenize/detokenize match `sprig tokenize`; plain greedy
streaming equals `sprig run --temp 0`; speculation with the MTP head (tree)
and the draft model (chain) gives the same text, and its statistics prove
that path ran; an iterator left early stops the generation; errors raise
sprig.Error with the library's message naming the file or field.
"""
import ctypes
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bindings", "python"))
import sprig  # noqa: E402

BIN = os.environ.get("SPRIG_BIN", "./sprig")
SHARED = os.environ.get("SPRIG_SHARED", "../shared")
MODEL = os.path.join(SHARED, "models", "stories260K.gguf")
MTP = os.path.join(SHARED, "models", "stories-mtp.gguf")
DRAFT = os.path.join(SHARED, "models", "stories-draft.gguf")
fails = 0
checks = 0


def check(ok, what):
    global fails, checks
    checks += 1
    if not ok:
        fails += 1
        print("FAIL:", what)


def run(*args):
    return subprocess.run([BIN, *args], check=True, capture_output=True).stdout.decode()


# ---- the structures, field for field, against the C compiler
structs = {"sprig_error": sprig._Error, "sprig_model_info": sprig._ModelInfo,
           "sprig_session_params": sprig._SessionParams, "sprig_build_info": sprig._BuildInfo}
with tempfile.TemporaryDirectory() as tmp:
    src = os.path.join(tmp, "layout.c")
    with open(src, "w") as f:
        f.write('#include "sprig.h"\n#include <stddef.h>\n#include <stdio.h>\nint main(void) {\n')
        for cname, py in structs.items():
            f.write('    printf("%s %%zu\\n", sizeof(struct %s));\n' % (cname, cname))
            for field, _ in py._fields_:
                f.write('    printf("%s.%s %%zu\\n", offsetof(struct %s, %s));\n' % (cname, field, cname, field))
        f.write('    printf("sprig_stats %zu\\n", sizeof(struct sprig_stats));\n    return 0;\n}\n')
    exe = os.path.join(tmp, "layout")
    subprocess.run([os.environ.get("CC", "cc"), "-std=c11", "-I", os.path.join(ROOT, "include"), src, "-o", exe], check=True)
    c = dict(line.rsplit(" ", 1) for line in subprocess.run([exe], check=True, capture_output=True).stdout.decode().splitlines())
for cname, py in structs.items():
    size = ctypes.sizeof(py)
    check(int(c[cname]) == size, "sizeof(struct %s): C %s, ctypes %d" % (cname, c[cname], size))
    for field, _ in py._fields_:
        off = getattr(py, field).offset
        check(int(c[cname + "." + field]) == off, "%s.%s: C offset %s, ctypes %d" % (cname, field, c[cname + "." + field], off))
check(int(c["sprig_stats"]) <= 4096, "struct sprig_stats fits the 4096-byte buffer Session.stats() hands the library")

# ---- version and build
v = run("--version").splitlines()
bi = sprig.build_info()
check(v[0] == "sprig " + sprig.version(), "version: %r vs %r" % (v[0], sprig.version()))
check(v[1].split(":", 1)[1].strip() == bi["kernels_compiled"], "kernels compiled: %r vs %r" % (v[1], bi))
check("reference" in bi["kernels_compiled"].split(), "reference kernels compiled in")
print("build:", bi)

# ---- tokenizer
m = sprig.Model(MODEL)
info = m.info
check(info["arch"] == "llama" and info["n_vocab"] == 512 and info["token_bos"] == 1, "model info %r" % info)
text = "Once upon a time, a little dog named Max found a ball."
ids = m.tokenize(text)
cli = [int(x) for x in run("tokenize", "-m", MODEL, "-p", text, "--ids").strip().strip("[]").replace(",", " ").split()]
check(ids == cli, "tokenize: module %r, sprig tokenize %r" % (ids, cli))
check(m.detokenize(ids[1:], prev_token=ids[0]) == text, "detokenize round trip: %r" % m.detokenize(ids[1:], prev_token=ids[0]))
check(m.tokenize(text, add_bos=False) == ids[1:], "add_bos=False drops only the BOS")

# ---- plain greedy streaming = the command line
prompt = "Once upon a time"
want = run("run", "-m", MODEL, "-p", prompt, "-n", "64", "--temp", "0", "-q", "-t", "1")
plain = m.session(temp=0, n_threads=1)
pieces = list(plain.generate(prompt, max_tokens=64))
got = prompt + "".join(pieces)
check(got == want, "plain stream:\n  module %r\n  sprig  %r" % (got, want))
check(len(pieces) > 10, "streamed in pieces (%d)" % len(pieces))
st = plain.stats()
check(st["path"] == "plain" and st["generated_tokens"] == 64 and st["stop"] == "budget", "plain stats %r" % st)

# ---- speculation: same text, and the speculative path ran
for name, kw, path in (("mtp tree", dict(drafter="mtp", draft=MTP, tree=True, tree_branches=2), "tree"),
                       ("draft-model chain", dict(draft=DRAFT, draft_max=4, tree=False), "chain"),
                       ("draft-model tree auto", dict(draft=DRAFT, tree_auto=True, tree_width=3, draft_max=6, tree_branches=10), None)):
    with m.session(temp=0, n_threads=1, **kw) as s:
        out = prompt + s.complete(prompt, max_tokens=64)
        st = s.stats()
        check(out == want, "%s: text differs from plain:\n  %r" % (name, out))
        check(st["rounds"] > 0 and st["accepted"] > 0 and st["emitted_per_verify"] > 1.0,
              "%s: speculation ran (rounds %s, accepted %s)" % (name, st["rounds"], st["accepted"]))
        check(path is None or st["path"] == path, "%s: path %r, want %r" % (name, st["path"], path))
        print("%-22s path %-5s rounds %3d  emitted/verify %.2f  acceptance %.2f" %
              (name, st["path"], st["rounds"], st["emitted_per_verify"], st["acceptance_rate"]))

# ---- an iterator left early stops the generation; the session stays usable
g = plain.generate(prompt, max_tokens=200)
first = [next(g) for _ in range(3)]
g.close()
st = plain.stats()
check(st["stop"] == "cancel" and st["generated_tokens"] < 200, "early close: stop %r after %d tokens" % (st["stop"], st["generated_tokens"]))
check(prompt + plain.complete(prompt, max_tokens=64) == want, "the session after an early close")
check(len(first) == 3, "three pieces before the close")

# ---- errors carry the library's message
try:
    sprig.Model("/nonexistent/model.gguf")
    check(False, "loading a missing file raised nothing")
except sprig.Error as e:
    check("/nonexistent/model.gguf" in str(e) and e.status == "i/o error", "missing file: %s %r" % (e.status, str(e)))
with tempfile.NamedTemporaryFile(suffix=".gguf") as f:
    f.write(b"GGUF\x03\x00\x00\x00garbage")
    f.flush()
    try:
        sprig.Model(f.name)
        check(False, "a broken GGUF raised nothing")
    except sprig.Error as e:
        check(e.status == "bad file format" and f.name in str(e), "broken GGUF: %s %r" % (e.status, str(e)))
for kw, field in ((dict(drafter="ngram", draft_max=1000), "draft_max"), (dict(temp=-1.0), "temp"),
                  (dict(drafter="mtp", draft="/nonexistent/head.gguf"), "/nonexistent/head.gguf"), (dict(bogus=1), "bogus")):
    try:
        m.session(**kw)
        check(False, "session %r raised nothing" % kw)
    except sprig.Error as e:
        check(field in str(e), "session %r: message %r does not name %s" % (kw, str(e), field))

# ---- the README's example prints what the README says it prints
readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
sec = readme[readme.index("## Using sprig from Python"):]
code = sec[sec.index("```python\n") + 10:]
code = code[:code.index("```")]
shown = sec[sec.index("prints\n\n```\n") + 12:]
shown = shown[:shown.index("```")]
with tempfile.TemporaryDirectory() as tmp:
    os.symlink(os.path.abspath(SHARED), os.path.join(tmp, "shared"))
    os.mkdir(os.path.join(tmp, "main"))
    os.symlink(os.path.join(ROOT, "models"), os.path.join(tmp, "main", "models"))
    r = subprocess.run([sys.executable, "-B", "-c", code], cwd=os.path.join(tmp, "main"), capture_output=True,
                       env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "bindings", "python")))
    out = r.stdout.decode()
check(r.returncode == 0 and out == shown, "README's Python example:\n%s\nprinted\n%s\nREADME shows\n%s" % (r.stderr.decode(), out, shown))

print("%d checks, %d failed" % (checks, fails))
sys.exit(1 if fails else 0)
