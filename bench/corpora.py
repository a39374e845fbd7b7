"""Corpora for the language-model workloads (sources 001-004): deterministic stand-ins and real files.

Stand-ins are token-id sequences (not text) with the vocabulary size and token counts of the real
data sets in seed_workloads.md section 7, so a workload built on one has the real shapes: the same
softmax width, the same number of batches per epoch, the same tensors on the device. Their content
is random, so they say nothing about loss or accuracy, only about speed.

Generator (algorithm "zipf-table-v1"; changing it changes every stand-in, so bump the name):
  1. A table of 2**20 slots maps a 20-bit random index to a token id. Every id gets one slot; the
     remaining slots are shared in proportion to 1/rank (Zipf, exponent 1; id 0 most frequent),
     largest remainder first, ties to the lower id.
  2. random.Random(seed).getrandbits(32 * n) gives n 32-bit words (little-endian order); token i
     is table[word_i >> 12].
  3. Every id is then written once at a random position inside its own stratum of the sequence
     (ids shuffled over the strata by Fisher-Yates), so each id occurs at least once and the
     vocabulary size is exact.
Only getrandbits() is used (no random(), sample() or shuffle()), whose output is the same in every
Python version. If numpy is importable, step 2's table look-up is vectorised; the output is identical
(the random words come from the same stdlib call either way).

Real files: PTB (ptb.*.txt), WikiText-2 word level (wiki.*.tokens, standard or k-kawakami reading)
and Nietzsche (nietzsche.txt, character level). Each loader takes a directory, can verify sha256
digests the caller supplies (none are known to this module), and returns the same Corpus shape.

Python 3.5 syntax (2.7-compatible where cheap), standard library only.
"""
import hashlib
import io
import os
import random
import re
import sys
import zlib
from array import array

GENERATOR = "zipf-table-v1"
TABLE_BITS = 20

# ---------------------------------------------------------------------------------------------
# Stand-in specifications: sizes and where they come from. They are reprokit/data/datasets.yaml's
# readings (seed_workloads.md section 7), which the job file carries (facts.stand_ins; the harness
# calls configure() before any cell): this module keeps no copy of them.
# ---------------------------------------------------------------------------------------------
STAND_INS = {}


def configure(specs):
    """Take the stand-in specifications ({corpus: {"level", "vocab_size", "vocab_status", "splits",
    "split_status", "reading"}}) of a job file's facts.stand_ins."""
    STAND_INS.clear()
    STAND_INS.update(specs or {})


def _spec(name):
    if not STAND_INS:
        raise KeyError("no stand-in sizes: the job file carries no facts.stand_ins (the kit's planner "
                       "writes them from reprokit/data/datasets.yaml); make the job with the kit")
    if name not in STAND_INS:
        raise KeyError("no stand-in corpus %r; known: %s" % (name, ", ".join(stand_in_names())))
    return STAND_INS[name]


class Corpus(object):
    """A token-id sequence and its label. `tokens` is an array('i') of ids in [0, vocab_size)."""

    def __init__(self, name, split, level, tokens, vocab_size, stand_in, info, vocab=None):
        self.name = name
        self.split = split
        self.level = level
        self.tokens = tokens
        self.vocab_size = int(vocab_size)
        self.stand_in = bool(stand_in)
        self.info = dict(info)
        self.vocab = vocab  # list id -> token text for real files, None for stand-ins

    @property
    def n_tokens(self):
        return len(self.tokens)

    def label(self):
        """JSON-ready description (no token data), for ctx.extra and reports."""
        d = {"name": self.name, "split": self.split, "level": self.level,
             "n_tokens": self.n_tokens, "vocab_size": self.vocab_size,
             "stand_in": self.stand_in}
        d.update(self.info)
        return d

    def __repr__(self):
        return "Corpus(%s/%s, %d tokens, vocab %d%s)" % (
            self.name, self.split, self.n_tokens, self.vocab_size,
            ", stand-in" if self.stand_in else "")


# ---------------------------------------------------------------------------------------------
# Stand-in generation
# ---------------------------------------------------------------------------------------------
def _int32_typecode(unsigned):
    for code in (("I", "L") if unsigned else ("i", "l")):
        if array(code).itemsize == 4:
            return code
    raise RuntimeError("no 4-byte array typecode on this platform")


_U32 = _int32_typecode(True)
_I32 = _int32_typecode(False)


def default_seed(name, split):
    """Seed of a stand-in: CRC-32 of 'reprokit-stand-in/<name>/<split>' (stable everywhere)."""
    return zlib.crc32(("reprokit-stand-in/%s/%s" % (name, split)).encode("ascii")) & 0xffffffff


def zipf_counts(vocab_size, slots):
    """Slots per id: 1 each, the rest in proportion to 1/(id+1), largest remainder first."""
    if vocab_size < 1 or vocab_size > slots:
        raise ValueError("vocab_size must be in [1, %d], got %d" % (slots, vocab_size))
    weights = [1.0 / (r + 1) for r in range(vocab_size)]  # IEEE division: same on every platform
    total = 0.0
    for w in weights:
        total += w
    extra = slots - vocab_size
    shares = [extra * w / total for w in weights]
    counts = [1 + int(s) for s in shares]
    left = slots - sum(counts)
    order = sorted(range(vocab_size), key=lambda r: (-(shares[r] - int(shares[r])), r))
    for r in order[:left]:
        counts[r] += 1
    return counts


def _randbelow(rng, n):
    k = n.bit_length()
    r = rng.getrandbits(k)
    while r >= n:
        r = rng.getrandbits(k)
    return r


def _random_words(rng, n):
    """n 32-bit words from one getrandbits call, first word = lowest 32 bits."""
    if n == 0:
        return array(_U32)
    big = rng.getrandbits(32 * n)
    if hasattr(big, "to_bytes"):
        raw = big.to_bytes(4 * n, "little")
    else:  # Python 2.7
        import binascii
        raw = binascii.unhexlify("%0*x" % (8 * n, big))[::-1]
    words = array(_U32)
    if hasattr(words, "frombytes"):
        words.frombytes(raw)
    else:  # Python 2.7
        words.fromstring(raw)
    if sys.byteorder == "big":
        words.byteswap()
    return words


def _lookup(table, words, use_numpy):
    shift = 32 - TABLE_BITS
    if use_numpy:
        try:
            import numpy
        except ImportError:
            numpy = None
        if numpy is not None:
            idx = numpy.frombuffer(words, dtype=numpy.uint32) >> shift
            ids = numpy.asarray(table, dtype=numpy.int32)[idx]
            out = array(_I32)
            out.frombytes(ids.astype(numpy.int32).tobytes())
            return out
    return array(_I32, map(table.__getitem__, map(shift.__rrshift__, words)))


_TABLES = {}


def _zipf_table(vocab_size):
    if vocab_size not in _TABLES:
        table = []
        for i, c in enumerate(zipf_counts(vocab_size, 1 << TABLE_BITS)):
            table.extend([i] * c)
        _TABLES.clear()  # keep one table (1 M entries) at most
        _TABLES[vocab_size] = table
    return _TABLES[vocab_size]


def generate_ids(n_tokens, vocab_size, seed, use_numpy=True):
    """The stand-in generator (see module docstring). Returns array('i') of n_tokens ids."""
    n_tokens, vocab_size = int(n_tokens), int(vocab_size)
    if n_tokens < vocab_size:
        raise ValueError("n_tokens (%d) must be >= vocab_size (%d) so every id can occur"
                         % (n_tokens, vocab_size))
    table = _zipf_table(vocab_size)
    rng = random.Random(int(seed))
    tokens = _lookup(table, _random_words(rng, n_tokens), use_numpy)
    perm = list(range(vocab_size))
    for i in range(vocab_size - 1, 0, -1):
        j = _randbelow(rng, i + 1)
        perm[i], perm[j] = perm[j], perm[i]
    stride = n_tokens // vocab_size
    for s in range(vocab_size):
        start = s * stride
        length = stride if s < vocab_size - 1 else n_tokens - start
        tokens[start + _randbelow(rng, length)] = perm[s]
    return tokens


def ids_sha256(tokens):
    """sha256 of the ids as little-endian int32: a checksum of a token sequence."""
    a = tokens
    if not isinstance(a, array) or a.typecode != _I32 or sys.byteorder == "big":
        a = array(_I32, a)
        if sys.byteorder == "big":
            a.byteswap()
    data = a.tobytes() if hasattr(a, "tobytes") else a.tostring()
    return hashlib.sha256(data).hexdigest()


def stand_in_names():
    return sorted(STAND_INS)


def stand_in(name, split="train", seed=None, vocab_size=None, n_tokens=None, use_numpy=True):
    """A deterministic stand-in for split `split` of data set `name` (a key of STAND_INS).

    vocab_size / n_tokens override the section-7 sizes (for tiny tests); the label then says so.
    """
    spec = _spec(name)
    if split not in spec["splits"]:
        raise KeyError("stand-in %r has no split %r; known: %s"
                       % (name, split, ", ".join(sorted(spec["splits"]))))
    seed = default_seed(name, split) if seed is None else int(seed)
    v = spec["vocab_size"] if vocab_size is None else int(vocab_size)
    n = spec["splits"][split] if n_tokens is None else int(n_tokens)
    tokens = generate_ids(n, v, seed, use_numpy=use_numpy)
    info = {
        "generator": "%s: token ids (not text), 2**%d-slot Zipf table (exponent 1, every id at "
                     "least once), random.Random(seed).getrandbits" % (GENERATOR, TABLE_BITS),
        "seed": seed,
        "ids_sha256": ids_sha256(tokens),
        "reading": spec["reading"],
        "sizes_source": "reprokit/data/datasets.yaml (the job file's facts.stand_ins)",
        "n_tokens_status": spec["split_status"][split],
        "vocab_status": spec["vocab_status"],
        "overrides": {},
    }
    if vocab_size is not None and v != spec["vocab_size"]:
        info["overrides"]["vocab_size"] = v
    if n_tokens is not None and n != spec["splits"][split]:
        info["overrides"]["n_tokens"] = n
    return Corpus(name, split, spec["level"], tokens, v, True, info)


# ---------------------------------------------------------------------------------------------
# Real files
# ---------------------------------------------------------------------------------------------
class DataMissingError(IOError):
    """A data file is not where the caller said it is."""


class ChecksumError(ValueError):
    """A data file's sha256 differs from the digest the caller expected."""


HOW_TO_GET = {
    "ptb": "unpack Mikolov's PTB 'simple-examples' archive and pass its data/ directory (holding "
           "ptb.train.txt, ptb.valid.txt, ptb.test.txt)",
    "wikitext-2": "unpack WikiText-2 v1 (tokenised, not raw) and pass the directory holding "
                  "wiki.train.tokens, wiki.valid.tokens, wiki.test.tokens",
    "nietzsche": "put the Keras example's nietzsche.txt in the directory",
}


def file_sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _checked_file(data_dir, filename, sha256, dataset):
    """Path of data_dir/filename after the existence and (optional) sha256 checks, plus its
    provenance record. `sha256` maps file names to expected hex digests (or is None)."""
    path = os.path.join(data_dir, filename)
    if not os.path.isfile(path):
        raise DataMissingError(
            "%s not found in %s: %s; or give no data directory to use the deterministic stand-in"
            % (filename, data_dir, HOW_TO_GET[dataset]))
    actual = file_sha256(path)
    expected = (sha256 or {}).get(filename)
    if expected is not None and expected.lower() != actual:
        raise ChecksumError("%s: sha256 %s, expected %s (wrong or modified file)"
                            % (path, actual, expected.lower()))
    record = {"file": filename, "path": os.path.abspath(path), "sha256": actual,
              "sha256_expected": expected.lower() if expected else None,
              "sha256_verified": None if expected is None else True}
    return path, record


def _read_lines(path):
    with io.open(path, encoding="utf-8") as f:
        return f.readlines()


def _ptb_words(lines):
    # TF reader semantics: newlines become <eos>, then whitespace split.
    out = []
    for line in lines:
        out.extend(line.split())
        if line.endswith("\n"):
            out.append("<eos>")
    return out


def _wikitext_words(lines, reading):
    out = []
    for line in lines:
        if reading == "standard":
            out.extend(line.split())
            out.append("<eos>")
        else:  # kawakami: blank lines emit nothing, not even <eos>
            if not line.strip():
                continue
            out.extend(line.split())
            if line.endswith("\n"):
                out.append("<eos>")
    return out


def _encode(words, index, filename):
    unk = index.get("<unk>")
    ids = array(_I32)
    n_unk = 0
    for w in words:
        i = index.get(w)
        if i is None:
            if unk is None:
                raise ValueError("%s: word %r is not in the train vocabulary and there is no <unk>"
                                 % (filename, w))
            i = unk
            n_unk += 1
        ids.append(i)
    return ids, n_unk


def _load_word_corpus(name, dataset, data_dir, files, tokenize, vocab_rule, vocab_from, reading,
                      sha256):
    texts, records = {}, {}
    for split in ("train", "valid", "test"):
        path, records[split] = _checked_file(data_dir, files[split], sha256, dataset)
        texts[split] = tokenize(_read_lines(path))
    vocab = vocab_from(texts["train"])
    index = dict((w, i) for i, w in enumerate(vocab))
    out = {}
    for split in ("train", "valid", "test"):
        ids, n_unk = _encode(texts[split], index, files[split])
        info = dict(records[split])
        info.update({"reading": reading, "vocab_rule": vocab_rule,
                     "n_oov_mapped_to_unk": n_unk, "ids_sha256": ids_sha256(ids)})
        out[split] = Corpus(name, split, "word", ids, len(vocab), False, info, vocab)
    return out


def _vocab_by_count(words):
    counts = {}
    for w in words:
        counts[w] = counts.get(w, 0) + 1
    return sorted(counts, key=lambda w: (-counts[w], w))


def _vocab_first_seen(words):
    seen, vocab = set(), []
    for w in words:
        if w not in seen:
            seen.add(w)
            vocab.append(w)
    return vocab


def load_ptb(data_dir, sha256=None):
    """PTB word level from ptb.{train,valid,test}.txt -> {split: Corpus}.
    Words split on whitespace, <eos> per line; vocab from train sorted by (-count, word)."""
    files = {"train": "ptb.train.txt", "valid": "ptb.valid.txt", "test": "ptb.test.txt"}
    return _load_word_corpus(
        "ptb", "ptb", data_dir, files, _ptb_words,
        "train words sorted by (-count, word), as the TF PTB reader", _vocab_by_count,
        _spec("ptb")["reading"], sha256)


def load_wikitext2(data_dir, reading="standard", sha256=None):
    """WikiText-2 word level from wiki.{train,valid,test}.tokens -> {split: Corpus}.

    reading "standard": split() + <eos> for every line, blank lines included (section 7 counts);
    reading "kawakami": blank lines emit nothing (k-kawakami/rnn_benchmark).
    Vocab: train words in order of first appearance (the original's set() order is not
    reproducible; ids only name rows of the embedding, so speed does not depend on it)."""
    if reading not in ("standard", "kawakami"):
        raise ValueError("reading must be 'standard' or 'kawakami', got %r" % (reading,))
    files = {"train": "wiki.train.tokens", "valid": "wiki.valid.tokens",
             "test": "wiki.test.tokens"}
    name = "wikitext-2" if reading == "standard" else "wikitext-2-kawakami"
    return _load_word_corpus(
        name, "wikitext-2", data_dir, files, lambda lines: _wikitext_words(lines, reading),
        "train words in order of first appearance", _vocab_first_seen,
        _spec(name)["reading"], sha256)


def load_nietzsche(data_dir, sha256=None):
    """nietzsche.txt, lower-cased, one token per character; vocab = sorted characters."""
    path, record = _checked_file(data_dir, "nietzsche.txt", sha256, "nietzsche")
    with io.open(path, encoding="utf-8") as f:
        text = f.read().lower()
    vocab = sorted(set(text))
    index = dict((c, i) for i, c in enumerate(vocab))
    ids = array(_I32, [index[c] for c in text])
    info = dict(record)
    info.update({"reading": _spec("nietzsche")["reading"], "vocab_rule": "sorted characters",
                 "ids_sha256": ids_sha256(ids)})
    return Corpus("nietzsche", "train", "char", ids, len(vocab), False, info, vocab)


def load_wikitext2_char(data_dir, sha256=None):
    """wiki.train.raw as Keras-MXNet read it: per line the [a-zA-Z0-9]+ runs joined by one space,
    lower-cased, lines concatenated with no separator. Returns (ids list, vocab, provenance)."""
    path = os.path.join(data_dir, "wiki.train.raw")
    if not os.path.isfile(path):
        raise DataMissingError(
            "wiki.train.raw not found in %s: unpack wikitext-2-raw-v1.zip and pass the directory "
            "holding it; or give no data directory to use the deterministic stand-in" % data_dir)
    digest = file_sha256(path)
    expected = (sha256 or {}).get("wiki.train.raw")
    if expected is not None and expected.lower() != digest:
        raise ChecksumError("%s: sha256 %s, expected %s" % (path, digest, expected))
    word = re.compile("[a-zA-Z0-9]+")
    with io.open(path, encoding="utf-8") as f:
        text = "".join(" ".join(word.findall(line)).lower() for line in f)
    vocab = sorted(set(text))
    index = dict((c, i) for i, c in enumerate(vocab))
    info = {"file": "wiki.train.raw", "path": os.path.abspath(path), "sha256": digest,
            "sha256_verified": None if expected is None else True,
            "reading": "Keras-MXNet char preprocessing (section 3.1)", "n_tokens": len(text),
            "vocab_size": len(vocab), "stand_in": False}
    return [index[c] for c in text], vocab, info


def open_corpus(name, split, data_dir=None, sha256=None, **stand_in_args):
    """One split of data set `name`: the real files when data_dir is given, else the stand-in."""
    if data_dir is None:
        return stand_in(name, split, **stand_in_args)
    if stand_in_args:
        raise ValueError("stand-in overrides %s do not apply to real data"
                         % ", ".join(sorted(stand_in_args)))
    if name == "ptb":
        return load_ptb(data_dir, sha256)[split]
    if name in ("wikitext-2", "wikitext-2-kawakami"):
        reading = "standard" if name == "wikitext-2" else "kawakami"
        return load_wikitext2(data_dir, reading, sha256)[split]
    if name == "nietzsche":
        if split != "train":
            raise KeyError("nietzsche has only a train split")
        return load_nietzsche(data_dir, sha256)
    raise KeyError("no real-file loader for %r (stand-in only)" % (name,))
