"""sprig from Python: the C library (libsprig.so) through ctypes, standard library only.

    import sprig
    m = sprig.Model("models/stories260K.gguf")
    print(m.tokenize("Once upon a time"))                  # [1, 403, 407, 261, 378]
    s = m.session(temp=0, drafter="mtp", draft="stories-mtp.gguf", tree=True, tree_branches=2)
    for text in s.generate("Once upon a time", max_tokens=64):
        print(text, end="", flush=True)                    # streamed as the rounds emit it
    print(s.stats()["emitted_per_verify"])

The library is found at $SPRIG_LIBRARY, else beside this file in a checkout
(../../libsprig.so after `make`), else where the dynamic loader looks
(`make install`: PREFIX/lib). Every failing call raises sprig.Error with the
library's message, which names the file, field or argument.

The structures below mirror include/sprig.h field for field (the test
compares their sizes and offsets with the C compiler's). While the version
is 0.x the library's minor version is its ABI: this module checks it.
"""

import ctypes
import ctypes.util
import json
import os
import queue
import threading

__all__ = ["Error", "Model", "Session", "version", "build_info", "load_library"]

ABI = "0.2"          # the soname this module was written against: libsprig.so.0.2

# ---------------------------------------------------------------- C structures


class _Error(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("msg", ctypes.c_char * 512)]


class _ModelInfo(ctypes.Structure):
    _fields_ = [
        ("arch", ctypes.c_char_p), ("name", ctypes.c_char_p),
        ("n_vocab", ctypes.c_int), ("n_ctx_train", ctypes.c_int), ("n_embd", ctypes.c_int),
        ("n_layer", ctypes.c_int), ("n_head", ctypes.c_int), ("n_head_kv", ctypes.c_int), ("n_ff", ctypes.c_int),
        ("n_params", ctypes.c_int64), ("weight_bytes", ctypes.c_uint64), ("load_ms", ctypes.c_double),
        ("kernels", ctypes.c_char_p), ("token_bos", ctypes.c_int32), ("token_eos", ctypes.c_int32),
        ("weights_copied_mb", ctypes.c_double), ("weights_mapped_mb", ctypes.c_double),
        ("experts_total", ctypes.c_int64), ("experts_touched", ctypes.c_int64), ("experts_touched_mb", ctypes.c_double),
    ]


class _SessionParams(ctypes.Structure):
    _fields_ = [
        ("n_threads", ctypes.c_int), ("n_ctx", ctypes.c_int), ("n_batch", ctypes.c_int),
        ("kv_type", ctypes.c_int), ("kv_block_slots", ctypes.c_int),
        ("temp", ctypes.c_float), ("top_k", ctypes.c_int), ("top_p", ctypes.c_float), ("min_p", ctypes.c_float),
        ("seed", ctypes.c_uint64),
        ("drafter", ctypes.c_int), ("draft_path", ctypes.c_char_p), ("draft_max", ctypes.c_int),
        ("tree", ctypes.c_int), ("tree_branches", ctypes.c_int), ("tree_auto", ctypes.c_bool),
        ("tree_width", ctypes.c_int), ("sampled_drafts", ctypes.c_bool),
        ("ngram_min", ctypes.c_int), ("ngram_max", ctypes.c_int),
        ("oracle_accept", ctypes.c_char_p), ("oracle_sibling", ctypes.c_float), ("oracle_seed", ctypes.c_uint64),
        ("ignore_eos", ctypes.c_bool), ("parse_special", ctypes.c_bool), ("top_logprobs", ctypes.c_int),
        ("batch", ctypes.c_void_p), ("prefill_chunk", ctypes.c_int),
    ]


class _BuildInfo(ctypes.Structure):
    _fields_ = [("version", ctypes.c_char_p), ("kernels_compiled", ctypes.c_char_p), ("kernels_cpu", ctypes.c_char_p),
                ("kernels_selected", ctypes.c_char_p), ("compiler", ctypes.c_char_p)]


_TEXT_FN = ctypes.CFUNCTYPE(ctypes.c_bool, ctypes.c_void_p, ctypes.POINTER(ctypes.c_char), ctypes.c_size_t)

_DRAFTERS = {"none": 0, "model": 1, "draft-model": 1, "mtp": 2, "ngram": 3}
_TREE = {None: -1, False: 0, True: 1}

# ---------------------------------------------------------------- loading


class Error(Exception):
    """A failed library call: .status is the sprig_status name, str() the library's message."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


_lib = None


def _candidates():
    env = os.environ.get("SPRIG_LIBRARY")
    if env:
        return [env]
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))
    out = [os.path.join(root, "libsprig.so"), os.path.join(root, "build", "libsprig.so." + ABI)]
    found = ctypes.util.find_library("sprig")
    return out + [found or "libsprig.so." + ABI]


def load_library(path=None):
    """Load libsprig.so (path, or the search above) once and declare its functions."""
    global _lib
    if _lib is not None and path is None:
        return _lib
    tried = []
    for cand in [path] if path else _candidates():
        if "/" in cand and not os.path.exists(cand):
            tried.append(cand + " (absent)")
            continue
        try:
            lib = ctypes.CDLL(cand)
            break
        except OSError as e:
            tried.append("%s (%s)" % (cand, e))
    else:
        raise Error("io", "cannot load libsprig.so; tried: " + "; ".join(tried) +
                    " (build it with make, install it with make install, or set SPRIG_LIBRARY)")
    _declare(lib)
    got = lib.sprig_version().decode()
    if ".".join(got.split(".")[:2]) != ABI:
        raise Error("unsupported", "libsprig %s has ABI %s; this module needs %s" %
                    (got, ".".join(got.split(".")[:2]), ABI))
    _lib = lib
    return lib


def _declare(lib):
    P, I, S, B = ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_bool
    E = ctypes.POINTER(_Error)
    sig = {
        "sprig_version": (S, []),
        "sprig_get_build_info": (None, [ctypes.POINTER(_BuildInfo)]),
        "sprig_status_str": (S, [I]),
        "sprig_model_load": (I, [S, ctypes.POINTER(P), E]),
        "sprig_model_free": (None, [P]),
        "sprig_model_get_info": (None, [P, ctypes.POINTER(_ModelInfo)]),
        "sprig_model_meta_str": (P, [P, S, ctypes.POINTER(ctypes.c_size_t)]),
        "sprig_text_to_tokens": (I, [P, S, ctypes.c_size_t, B, ctypes.POINTER(ctypes.c_int32), I, E]),
        "sprig_tokens_to_text": (P, [P, ctypes.POINTER(ctypes.c_int32), I, I]),
        "sprig_free": (None, [P]),
        "sprig_session_default_params": (_SessionParams, []),
        "sprig_session_create": (I, [P, ctypes.POINTER(_SessionParams), ctypes.POINTER(P), E]),
        "sprig_session_free": (None, [P]),
        "sprig_session_set_seed": (None, [P, ctypes.c_uint64]),
        "sprig_session_generate": (I, [P, S, ctypes.c_size_t, I, _TEXT_FN, P, E]),
        "sprig_session_get_stats": (None, [P, P]),
        "sprig_stats_to_json": (I, [P, ctypes.c_char_p, ctypes.c_size_t]),
        "sprig_set_log_level": (None, [I]),
    }
    for name, (res, args) in sig.items():
        f = getattr(lib, name)
        f.restype = res
        f.argtypes = args


def _raise(status, err):
    lib = load_library()
    raise Error(lib.sprig_status_str(status).decode(), err.msg.decode("utf-8", "replace"))


def version():
    """The library's version string ("0.2.0")."""
    return load_library().sprig_version().decode()


def build_info():
    """What the loaded library was built with: version, kernel families compiled in, those this CPU runs."""
    bi = _BuildInfo()
    load_library().sprig_get_build_info(ctypes.byref(bi))
    return {k: getattr(bi, k).decode() for k, _ in _BuildInfo._fields_}


# ---------------------------------------------------------------- models and sessions


class _Handle:
    """An object of the library's, freed by close(), on leaving a with block, or when collected."""
    _h = None
    _free = None                             # the library function that frees it

    def close(self):
        if self._h:
            getattr(self._lib, self._free)(self._h)
            self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


class Model(_Handle):
    """A loaded GGUF model (mapped, validated). Sessions borrow it: close them first."""
    _free = "sprig_model_free"

    def __init__(self, path):
        lib = load_library()
        self._lib = lib
        self._h = ctypes.c_void_p()
        err = _Error()
        st = lib.sprig_model_load(os.fsencode(path), ctypes.byref(self._h), ctypes.byref(err))
        if st:
            self._h = None
            _raise(st, err)
        self.path = path

    @property
    def info(self):
        """general.architecture, sizes, parameters, the kernel family, BOS/EOS ids, as a dict."""
        mi = _ModelInfo()
        self._lib.sprig_model_get_info(self._h, ctypes.byref(mi))
        d = {k: getattr(mi, k) for k, _ in _ModelInfo._fields_}
        return {k: (v.decode() if isinstance(v, bytes) else v) for k, v in d.items()}

    def meta(self, key):
        """A string metadata value of the file (e.g. "tokenizer.chat_template"), or None."""
        n = ctypes.c_size_t()
        p = self._lib.sprig_model_meta_str(self._h, key.encode(), ctypes.byref(n))
        return None if not p else ctypes.string_at(p, n.value).decode("utf-8", "replace")

    def tokenize(self, text, add_bos=True):
        """The token ids of text (with the vocabulary's BOS when add_bos)."""
        data = text.encode() if isinstance(text, str) else bytes(text)
        err = _Error()
        cap = len(data) + 8
        while True:
            buf = (ctypes.c_int32 * cap)()
            n = self._lib.sprig_text_to_tokens(self._h, data, len(data), add_bos, buf, cap, ctypes.byref(err))
            if n < 0:
                _raise(err.code, err)
            if n <= cap:
                return list(buf[:n])
            cap = n

    def detokenize(self, ids, prev_token=-1):
        """The text of ids (prev_token: the token before them; the BOS id drops a leading space)."""
        arr = (ctypes.c_int32 * len(ids))(*ids)
        p = self._lib.sprig_tokens_to_text(self._h, arr, len(ids), prev_token)
        if not p:
            raise Error("out of memory", "sprig_tokens_to_text: allocation failed")
        try:
            return ctypes.string_at(p).decode("utf-8", "replace")
        finally:
            self._lib.sprig_free(p)

    def session(self, **params):
        """A session (cache, sampler, optional drafter) on this model; see Session."""
        return Session(self, **params)


class Session(_Handle):
    """Generation on a model, plain or speculative.

    Keyword parameters are sprig_session_params' fields (include/sprig.h), plus:
      drafter: "none" | "model" | "mtp" | "ngram" (default: "model" or "mtp" when draft is given)
      draft:   the draft model or MTP head file (draft_path)
      tree:    True / False (default: from $SPRIG_TREE)
      tree_auto: True (implies tree)
      kv_type: a name ("f16", "int8", ...) or the enum's number
    """
    _free = "sprig_session_free"

    def __init__(self, model, **params):
        lib = model._lib
        self._lib, self._model = lib, model
        p = lib.sprig_session_default_params()
        self._keep = []                      # the strings p points to live as long as the session
        draft = params.pop("draft", params.pop("draft_path", None))
        drafter = params.pop("drafter", None)
        if drafter is None:
            drafter = "model" if draft else "none"
        if drafter not in _DRAFTERS:
            raise Error("invalid argument", "drafter: '%s' is not one of %s" % (drafter, ", ".join(sorted(_DRAFTERS))))
        p.drafter = _DRAFTERS[drafter]
        if draft:
            b = os.fsencode(draft)
            self._keep.append(b)
            p.draft_path = b
        tree = params.pop("tree", None)
        if params.get("tree_auto"):
            tree = True
        p.tree = _TREE[None if tree is None else bool(tree)]
        kv = params.pop("kv_type", None)
        if isinstance(kv, str):
            names = ["f32", "f16", "int8", "turbo4", "turbo4-asym", "turbo3-asym", "turbo4-delegated"]
            if kv not in names:
                raise Error("invalid argument", "kv_type: '%s' is not one of %s" % (kv, "|".join(names)))
            p.kv_type = names.index(kv)
        elif kv is not None:
            p.kv_type = int(kv)
        fields = {k for k, _ in _SessionParams._fields_} - {"batch", "draft_path", "drafter", "tree", "kv_type"}
        for k, v in params.items():
            if k not in fields:
                raise Error("invalid argument", "Session: unknown parameter '%s'" % k)
            if k == "oracle_accept":
                v = v.encode()
                self._keep.append(v)
            setattr(p, k, v)
        self._h = ctypes.c_void_p()
        err = _Error()
        st = lib.sprig_session_create(model._h, ctypes.byref(p), ctypes.byref(self._h), ctypes.byref(err))
        if st:
            self._h = None
            _raise(st, err)
        self._busy = threading.Lock()

    def set_seed(self, seed):
        self._lib.sprig_session_set_seed(self._h, seed)

    def generate(self, prompt, max_tokens=256):
        """Stream the continuation of prompt as text pieces (an iterator).

        The generation runs in a thread while the caller iterates; leaving the
        loop early (break, close()) stops it. Errors raise sprig.Error."""
        if not self._busy.acquire(blocking=False):
            raise Error("invalid argument", "generate: this session is already generating")
        q = queue.Queue(maxsize=16)         # the generation runs at most this far ahead of the reader
        stop = threading.Event()

        def on_text(user, text, n):
            q.put(ctypes.string_at(text, n))
            return not stop.is_set()

        cb = _TEXT_FN(on_text)
        data = prompt.encode() if isinstance(prompt, str) else bytes(prompt)
        result = {}

        def run():
            err = _Error()
            st = self._lib.sprig_session_generate(self._h, data, len(data), max_tokens, cb, None, ctypes.byref(err))
            if st:
                result["error"] = (st, err)
            q.put(None)

        t = threading.Thread(target=run, daemon=True)
        t.start()
        pending = b""
        try:
            while True:
                piece = q.get()
                if piece is None:
                    break
                pending += piece
                try:                         # pieces are whole UTF-8 characters; keep any tail whole anyway
                    text, pending = pending.decode("utf-8"), b""
                except UnicodeDecodeError as e:
                    text, pending = pending[:e.start].decode("utf-8"), pending[e.start:]
                if text:
                    yield text
            if pending:
                yield pending.decode("utf-8", "replace")
        finally:
            stop.set()                       # the next piece's callback returns false: generation ends
            while t.is_alive():              # drain, so a callback blocked on the full queue returns
                try:
                    q.get(timeout=0.05)
                except queue.Empty:
                    pass
            t.join()
            self._busy.release()
        if "error" in result:
            _raise(*result["error"])

    def complete(self, prompt, max_tokens=256):
        """The whole continuation of prompt as one string."""
        return "".join(self.generate(prompt, max_tokens))

    def stats(self):
        """The last generation's figures (sprig_stats as sprig_stats_to_json writes them): path, rounds,
        proposed, accepted, emitted_per_verify, acceptance_rate, draft/verify ms, tok/s, stop, ..."""
        raw = ctypes.create_string_buffer(4096)          # struct sprig_stats (far smaller; the test checks), filled by the library
        self._lib.sprig_session_get_stats(self._h, raw)
        buf = ctypes.create_string_buffer(8192)
        n = self._lib.sprig_stats_to_json(raw, buf, len(buf))
        if n >= len(buf):
            buf = ctypes.create_string_buffer(n + 1)
            self._lib.sprig_stats_to_json(raw, buf, len(buf))
        return json.loads(buf.value.decode())
