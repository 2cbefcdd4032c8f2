"""Tiny masked-LM checkpoints for tests, built offline from configs and a tokenizer trained on the spot.

Every builder returns the path of a folder that loads with ``AutoModelForMaskedLM.from_pretrained`` and
``AutoTokenizer.from_pretrained``. Folders are built once per test session (cached under one temporary folder,
removed at exit): treat them as read-only and copy them before changing anything.

Tokenizers: WordPiece (BERT, DistilBERT, ALBERT) or byte-level BPE (RoBERTa, ModernBERT), trained with the
``tokenizers`` library on the first SciFact documents when the shared data is present, else on the built-in text.
"""

from __future__ import annotations

import atexit
import json
import shutil
import tempfile
from pathlib import Path
from typing import Literal

Family = Literal["bert", "distilbert", "albert", "roberta", "modernbert"]
FAMILIES: tuple[Family, ...] = ("bert", "distilbert", "albert", "roberta", "modernbert")

SCIFACT_CORPUS = Path(__file__).resolve().parents[2] / "shared" / "data" / "beir" / "scifact" / "corpus.jsonl"
VOCAB_SIZE = 600          # tokenizer vocabulary (the trainer may stop below it)
HIDDEN = 32
MAX_POSITIONS = 128
MODERNBERT_VOCAB_PAD = 64  # ModernBERT pads its vocab (50280 tokens -> 50368 rows): reproduce that

BUILTIN_TEXT = [
    "Aspirin reduces the risk of heart attack in adults with cardiovascular disease.",
    "The cell membrane controls the movement of substances in and out of cells.",
    "Vitamin D deficiency is associated with bone loss and fractures in older women.",
    "Smoking increases the incidence of lung cancer and chronic obstructive pulmonary disease.",
    "Insulin resistance precedes the onset of type 2 diabetes by several years.",
    "Mutations in the BRCA1 gene raise the lifetime risk of breast and ovarian cancer.",
    "Regular physical exercise lowers blood pressure and improves glucose tolerance.",
    "Antibiotic resistance spreads among bacteria through horizontal gene transfer.",
    "The hippocampus is essential for the formation of new long-term memories.",
    "Statins lower LDL cholesterol by inhibiting HMG-CoA reductase in the liver.",
    "Sleep deprivation impairs attention, working memory and immune function.",
    "Malaria is transmitted by the bite of infected female Anopheles mosquitoes.",
]

_cache: dict[tuple, Path] = {}
_root: Path | None = None


def _workdir() -> Path:
    global _root
    if _root is None:
        _root = Path(tempfile.mkdtemp(prefix="lsr_eval_tiny_"))
        atexit.register(shutil.rmtree, _root, True)
    return _root


def sample_texts(n: int = 300) -> list[str]:
    """``n`` training texts: SciFact titles + abstracts when the shared data exists, else the built-in text."""
    if SCIFACT_CORPUS.exists():
        out = []
        with open(SCIFACT_CORPUS, encoding="utf-8") as f:
            for line in f:
                doc = json.loads(line)
                out.append(f"{doc['title']} {doc['text']}".strip())
                if len(out) == n:
                    break
        return out
    return [BUILTIN_TEXT[i % len(BUILTIN_TEXT)] for i in range(max(n, len(BUILTIN_TEXT)))][:n]


def _wordpiece(folder: Path) -> None:
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers
    from transformers import BertTokenizer

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tok.train_from_iterator(sample_texts() + BUILTIN_TEXT,
                            trainers.WordPieceTrainer(vocab_size=VOCAB_SIZE, special_tokens=specials))
    BertTokenizer(vocab=tok.get_vocab()).save_pretrained(folder)


def _byte_bpe(folder: Path, style: Literal["roberta", "modernbert"]) -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast, RobertaTokenizer

    if style == "roberta":
        specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    else:
        specials = ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(sample_texts() + BUILTIN_TEXT, trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE, special_tokens=specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    if style == "roberta":
        merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" "))
                  for m in json.loads(tok.to_str())["model"]["merges"]]
        RobertaTokenizer(vocab=tok.get_vocab(), merges=merges).save_pretrained(folder)
        return
    vocab = tok.get_vocab()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])])
    PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", cls_token="[CLS]", sep_token="[SEP]",
                            pad_token="[PAD]", mask_token="[MASK]").save_pretrained(folder)


def _config(family: Family, tokenizer, tied: bool):
    from transformers import AlbertConfig, BertConfig, DistilBertConfig, ModernBertConfig, RobertaConfig

    v = len(tokenizer)
    common = dict(pad_token_id=tokenizer.pad_token_id, tie_word_embeddings=tied)
    if family == "bert":
        return BertConfig(vocab_size=v, hidden_size=HIDDEN, num_hidden_layers=2, num_attention_heads=2,
                          intermediate_size=2 * HIDDEN, max_position_embeddings=MAX_POSITIONS, **common)
    if family == "distilbert":
        return DistilBertConfig(vocab_size=v, dim=HIDDEN, n_layers=2, n_heads=2, hidden_dim=2 * HIDDEN,
                                max_position_embeddings=MAX_POSITIONS, **common)
    if family == "albert":
        # embedding_size < hidden_size, as in the released ALBERT models (128 < 768).
        return AlbertConfig(vocab_size=v, embedding_size=HIDDEN // 2, hidden_size=HIDDEN, num_hidden_layers=2,
                            num_attention_heads=2, intermediate_size=2 * HIDDEN,
                            max_position_embeddings=MAX_POSITIONS, bos_token_id=tokenizer.cls_token_id,
                            eos_token_id=tokenizer.sep_token_id, **common)
    if family == "roberta":
        return RobertaConfig(vocab_size=v, hidden_size=HIDDEN, num_hidden_layers=2, num_attention_heads=2,
                             intermediate_size=2 * HIDDEN, max_position_embeddings=MAX_POSITIONS + 2,
                             bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id, **common)
    padded = -(-v // MODERNBERT_VOCAB_PAD) * MODERNBERT_VOCAB_PAD
    return ModernBertConfig(vocab_size=padded, hidden_size=HIDDEN, intermediate_size=2 * HIDDEN,
                            num_hidden_layers=2, num_attention_heads=2, max_position_embeddings=MAX_POSITIONS,
                            local_attention=16, global_attn_every_n_layers=2, bos_token_id=tokenizer.cls_token_id,
                            eos_token_id=tokenizer.sep_token_id, cls_token_id=tokenizer.cls_token_id,
                            sep_token_id=tokenizer.sep_token_id, **common)


def tiny_model(family: Family = "bert", *, head: bool = True, tied: bool = True, seed: int = 0) -> Path:
    """Folder of a tiny randomly initialised ``family`` masked LM with its tokenizer.

    ``head=False`` saves only the backbone (no MLM-head weights, like sentence-transformers checkpoints);
    ``tied=False`` unties the decoder from the input embeddings. With a head, every head tensor (logits bias
    included) is random, so that "left untouched" is a meaningful check.
    """
    if family not in FAMILIES:
        raise ValueError(f"family {family!r}: expected one of {', '.join(FAMILIES)}")
    key = (family, head, tied, seed)
    if key in _cache:
        return _cache[key]
    import torch
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    tok_dir = _workdir() / f"tokenizer-{family}"
    if not tok_dir.exists():
        if family in ("roberta", "modernbert"):
            _byte_bpe(tok_dir, family)
        else:
            _wordpiece(tok_dir)
    tokenizer = AutoTokenizer.from_pretrained(tok_dir)
    torch.manual_seed(seed)
    model = AutoModelForMaskedLM.from_config(_config(family, tokenizer, tied))
    base_prefix = model.base_model_prefix + "."
    with torch.no_grad():
        for name, p in model.named_parameters():
            if not name.startswith(base_prefix):
                p.add_(torch.randn_like(p) * 0.05)  # LayerNorm weights stay near 1, biases become non-zero
    folder = _workdir() / f"{family}-{'head' if head else 'nohead'}-{'tied' if tied else 'untied'}-{seed}"
    (model if head else model.base_model).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    _cache[key] = folder
    return folder


def tiny_bert(tmp_path: Path | None = None, *, head: bool = True) -> Path:
    """A tiny BERT folder; with ``tmp_path``, a private copy there (safe to modify)."""
    src = tiny_model("bert", head=head)
    if tmp_path is None:
        return src
    dst = Path(tmp_path) / src.name
    shutil.copytree(src, dst)
    return dst
