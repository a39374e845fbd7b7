"""bench/corpora.py: stand-in sizes, determinism, and the real-file loaders on small files."""

import hashlib
import os
import sys
from pathlib import Path

import pytest

from reprokit.catalog import datasets

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import corpora  # noqa: E402

corpora.configure(datasets.stand_in_specs())  # as the harness does from the job file's facts

ALL_SPLITS = [(name, split) for name in corpora.stand_in_names()
              for split in sorted(corpora.STAND_INS[name]["splits"])]

# Section-7 sizes, written out again so a change to the table in corpora.py is caught here.
EXPECTED = {
    ("ptb", "train"): (929589, 10000), ("ptb", "valid"): (73760, 10000),
    ("ptb", "test"): (82430, 10000),
    ("wikitext-2", "train"): (2088628, 33278), ("wikitext-2", "valid"): (217646, 33278),
    ("wikitext-2", "test"): (245569, 33278),
    ("wikitext-2-kawakami", "train"): (2076000, 33278),
    ("wikitext-2-kawakami", "valid"): (216347, 33278),
    ("wikitext-2-kawakami", "test"): (244102, 33278),
    ("nietzsche", "train"): (600893, 57),
    ("wikitext-2-char-keras-mxnet", "train"): (10100000, 37),
}

# Pins generator zipf-table-v1: if this changes, every stand-in changed (rename the generator).
PTB_VALID_SHA256 = "aaceb161dd98"


def test_expected_table_covers_every_stand_in():
    assert sorted(EXPECTED) == sorted(ALL_SPLITS)


@pytest.mark.parametrize("name,split", ALL_SPLITS)
def test_stand_in_sizes_and_ids(name, split):
    c = corpora.stand_in(name, split)
    n, v = EXPECTED[(name, split)]
    assert c.n_tokens == n and len(c.tokens) == n
    assert c.vocab_size == v
    counts = [0] * v
    for i in set(c.tokens):  # raises IndexError if an id is >= v
        assert i >= 0
        counts[i] += 1
    assert all(counts), "some id never occurs"
    lab = c.label()
    assert lab["stand_in"] is True and lab["n_tokens"] == n and lab["vocab_size"] == v
    assert lab["seed"] == corpora.default_seed(name, split)
    assert corpora.GENERATOR in lab["generator"]
    assert lab["sizes_source"].startswith("reprokit/data/datasets.yaml")
    assert lab["overrides"] == {}
    assert lab["ids_sha256"] == corpora.ids_sha256(c.tokens)


def test_unverified_sizes_are_labelled():
    spec = corpora.STAND_INS
    weak = [spec["wikitext-2-kawakami"]["split_status"]["train"],
            spec["wikitext-2-char-keras-mxnet"]["split_status"]["train"],
            spec["wikitext-2-char-keras-mxnet"]["vocab_status"]]
    for status in weak:  # "<datasets.yaml status>: <source>"
        assert status.split(":")[0] in ("estimate", "inference", "unverified"), status
    assert "UNVERIFIED" in weak[0]
    c = corpora.stand_in("wikitext-2-kawakami", "train", vocab_size=10, n_tokens=100)
    assert c.info["n_tokens_status"] == weak[0]
    assert c.info["sizes_source"].startswith("reprokit/data/datasets.yaml")


def test_without_the_job_files_sizes_there_is_no_stand_in():
    """bench/corpora.py keeps no copy of datasets.yaml's sizes: a job without facts.stand_ins
    gets none, with the reason."""
    saved = dict(corpora.STAND_INS)
    try:
        corpora.configure(None)
        with pytest.raises(KeyError, match="carries no facts.stand_ins"):
            corpora.stand_in("ptb", "valid")
    finally:
        corpora.configure(saved)
    assert "929589" not in (BENCH / "corpora.py").read_text()


def test_zipf_shape():
    counts = corpora.zipf_counts(33278, 1 << corpora.TABLE_BITS)
    assert sum(counts) == 1 << corpora.TABLE_BITS
    assert min(counts) >= 1
    assert all(a >= b for a, b in zip(counts, counts[1:]))
    assert counts[0] > 20 * counts[100]
    c = corpora.stand_in("ptb", "valid")
    freq = [0] * c.vocab_size
    for i in c.tokens:
        freq[i] += 1
    assert freq[0] > freq[10] > freq[1000]


def test_deterministic_and_pinned():
    a = corpora.stand_in("ptb", "valid")
    b = corpora.stand_in("ptb", "valid")
    assert a.tokens == b.tokens
    assert (a.tokens[0], a.tokens[-1]) == (b.tokens[0], b.tokens[-1])
    assert a.label()["ids_sha256"].startswith(PTB_VALID_SHA256)
    other = corpora.stand_in("ptb", "valid", seed=1)
    assert other.tokens != a.tokens and other.label()["seed"] == 1


def test_stdlib_path_equals_numpy_path():
    pytest.importorskip("numpy")
    for v, n in ((10000, 73760), (57, 5000)):
        fast = corpora.generate_ids(n, v, seed=7, use_numpy=True)
        slow = corpora.generate_ids(n, v, seed=7, use_numpy=False)
        assert fast == slow


def test_overrides_are_labelled_and_checked():
    c = corpora.stand_in("wikitext-2-kawakami", "valid", vocab_size=50, n_tokens=1000)
    assert c.n_tokens == 1000 and c.vocab_size == 50 and sorted(set(c.tokens)) == list(range(50))
    assert c.label()["overrides"] == {"vocab_size": 50, "n_tokens": 1000}
    with pytest.raises(ValueError):
        corpora.generate_ids(10, 50, seed=1)
    with pytest.raises(KeyError):
        corpora.stand_in("ptb", "dev")
    with pytest.raises(KeyError):
        corpora.stand_in("imagenet")


# -- real-file loaders on small files in the real formats ---------------------------------------
def _write(path, text):
    path.write_text(text, encoding="utf-8")
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@pytest.fixture
def ptb_dir(tmp_path):
    _write(tmp_path / "ptb.train.txt",
           " the cat sat on the mat \n a <unk> cat \n the end \n")
    _write(tmp_path / "ptb.valid.txt", " the cat \n")
    _write(tmp_path / "ptb.test.txt", " a mat \n on the <unk> \n")
    return tmp_path


def test_load_ptb(ptb_dir):
    sp = corpora.load_ptb(str(ptb_dir))
    tr = sp["train"]
    # counts: the 3, <eos> 3, cat 2, then a, end, mat, on, sat, <unk> by count then text
    assert tr.vocab == ["<eos>", "the", "cat", "<unk>", "a", "end", "mat", "on", "sat"]
    assert tr.n_tokens == 14 and tr.vocab_size == 9 and tr.stand_in is False
    words = [tr.vocab[i] for i in tr.tokens]
    assert words[:7] == ["the", "cat", "sat", "on", "the", "mat", "<eos>"]
    assert [sp["valid"].vocab[i] for i in sp["valid"].tokens] == ["the", "cat", "<eos>"]
    assert sp["test"].n_tokens == 7
    lab = tr.label()
    assert lab["stand_in"] is False and lab["file"] == "ptb.train.txt"
    assert lab["sha256"] == corpora.file_sha256(str(ptb_dir / "ptb.train.txt"))
    assert lab["sha256_verified"] is None


def test_sha256_checked(ptb_dir):
    good = {"ptb.train.txt": corpora.file_sha256(str(ptb_dir / "ptb.train.txt")).upper()}
    sp = corpora.load_ptb(str(ptb_dir), sha256=good)
    assert sp["train"].label()["sha256_verified"] is True
    bad = {"ptb.valid.txt": "0" * 64}
    with pytest.raises(corpora.ChecksumError, match="ptb.valid.txt"):
        corpora.load_ptb(str(ptb_dir), sha256=bad)


def test_missing_file_names_file_and_remedy(ptb_dir):
    os.remove(str(ptb_dir / "ptb.test.txt"))
    with pytest.raises(corpora.DataMissingError) as e:
        corpora.load_ptb(str(ptb_dir))
    msg = str(e.value)
    assert "ptb.test.txt" in msg and str(ptb_dir) in msg and "stand-in" in msg
    with pytest.raises(IOError):
        corpora.load_nietzsche(str(ptb_dir))


WIKI_TRAIN = (" \n = Valkyria Chronicles = \n \n The game began in 2010 . \n \n"
              " = = Gameplay = = \n It is a <unk> game . \n")
WIKI_VALID = " \n = Heading = \n \n unseen word game \n"


@pytest.fixture
def wiki_dir(tmp_path):
    _write(tmp_path / "wiki.train.tokens", WIKI_TRAIN)
    _write(tmp_path / "wiki.valid.tokens", WIKI_VALID)
    _write(tmp_path / "wiki.test.tokens", " \n The end . \n")
    return tmp_path


def test_load_wikitext2_standard_and_kawakami(wiki_dir):
    lines = WIKI_TRAIN.splitlines(True)
    n_words = sum(len(line.split()) for line in lines)
    n_blank = sum(1 for line in lines if not line.strip())
    std = corpora.load_wikitext2(str(wiki_dir))
    kk = corpora.load_wikitext2(str(wiki_dir), reading="kawakami")
    assert std["train"].n_tokens == n_words + len(lines)
    assert kk["train"].n_tokens == n_words + len(lines) - n_blank
    assert std["train"].name == "wikitext-2" and kk["train"].name == "wikitext-2-kawakami"
    v = std["train"].vocab
    assert v[:4] == ["<eos>", "=", "Valkyria", "Chronicles"]  # first appearance
    assert std["train"].vocab_size == len(set(WIKI_TRAIN.split())) + 1
    kv = kk["train"].vocab
    assert kv[:3] == ["=", "Valkyria", "Chronicles"]
    assert [kv[i] for i in kk["train"].tokens[:5]] == ["=", "Valkyria", "Chronicles", "=", "<eos>"]
    # valid: 'Heading', 'unseen' and 'word' are not train words -> <unk>
    va = std["valid"]
    assert va.label()["n_oov_mapped_to_unk"] == 3
    assert [v[i] for i in va.tokens] == ["<eos>", "=", "<unk>", "=", "<eos>", "<eos>", "<unk>",
                                         "<unk>", "game", "<eos>"]
    assert kk["valid"].n_tokens == va.n_tokens - 2
    with pytest.raises(ValueError):
        corpora.load_wikitext2(str(wiki_dir), reading="other")


def test_load_nietzsche(tmp_path):
    text = "PREFACE\n\n\nSupposing that Truth is a woman--what then?\n"
    digest = _write(tmp_path / "nietzsche.txt", text)
    c = corpora.load_nietzsche(str(tmp_path), sha256={"nietzsche.txt": digest})
    assert c.n_tokens == len(text) and c.level == "char" and c.split == "train"
    assert c.vocab == sorted(set(text.lower()))
    assert "".join(c.vocab[i] for i in c.tokens) == text.lower()
    assert c.label()["sha256_verified"] is True
    with pytest.raises(corpora.ChecksumError):
        corpora.load_nietzsche(str(tmp_path), sha256={"nietzsche.txt": "ab" * 32})


def test_open_corpus_dispatch(ptb_dir):
    assert corpora.open_corpus("ptb", "valid", data_dir=str(ptb_dir)).n_tokens == 3
    c = corpora.open_corpus("ptb", "valid", vocab_size=20, n_tokens=100)
    assert c.stand_in and c.n_tokens == 100
    with pytest.raises(ValueError):
        corpora.open_corpus("ptb", "valid", data_dir=str(ptb_dir), vocab_size=20)
    with pytest.raises(KeyError):
        corpora.open_corpus("wikitext-2-char-keras-mxnet", "train", data_dir=str(ptb_dir))


