"""The regime the confirmatory rescaling study's result was measured in: what +0.040 nDCG@10 (compensated
k = 16 minus k = 1, NFCorpus test) stands on. Nothing of the registered study changes; this only reads its files.

    python studies/confirm_rescale_nfcorpus/regime.py compute [--data ../shared/data/beir/nfcorpus]
        # -> results/studies/confirm-rescale-nfcorpus/regime.json
    python studies/confirm_rescale_nfcorpus/regime.py render {readme,results,study}   # a page's block, printed
    python studies/confirm_rescale_nfcorpus/regime.py write                          # each page's block, replaced
    python studies/confirm_rescale_nfcorpus/regime.py check                          # every page shows its block

``compute`` reads the committed tables (``results/benchmarks/confirm-rescale-nfcorpus-{dev,test}``), the committed
test runs (``results/studies/confirm-rescale-nfcorpus/runs/<run>/test/run.trec.xz``) and their search manifests, the
training logs and configs (``results/train/<run>/``) and inspect-head's diagnosis, plus NFCorpus's test qrels and
corpus (for the share of queries that score 0 and the random ranking's expected nDCG@10; their fingerprints must be
those the test table was made with). nDCG@10 is the toolkit's (:func:`lsr_eval.evaluation.evaluate.evaluate`:
``trec_eval -c``'s, as ranx computes it: gain = grade, discount log2(rank + 1), the ideal DCG from the query's judged
grades, the mean over the 323 judged queries).

``render`` writes the regime block of each page that quotes the result, between ``<!-- regime: begin -->`` and
``<!-- regime: end -->``, from ``regime.json`` alone; ``tests/unit/test_confirm_rescale_regime.py`` checks that each
page holds its block as rendered and that ``regime.json`` is what the committed files give.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import importlib.util
import json
import math
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
STUDY = "results/studies/confirm-rescale-nfcorpus"
OUT = f"{STUDY}/regime.json"
DEV_TABLE, TEST_TABLE = (f"results/benchmarks/confirm-rescale-nfcorpus-{s}" for s in ("dev", "test"))
DATA = "../shared/data/beir/nfcorpus"
CUTOFF = 10
TREATMENT, BASELINE, LARGEST_BELOW = "k16-compensated", "k1", "k8-compensated"
PAGES = {"readme": "README.md", "results": "docs/results.md",
         "study": "docs/studies/confirm-rescale-nfcorpus-results.md"}
BEGIN, END = "<!-- regime: begin -->", "<!-- regime: end -->"
WIDTH = 118
LINK = "docs/studies/confirm-rescale-nfcorpus-results.md#the-regime-of-the-result"


def _analysis():
    """The study's analysis module (its arms, seeds, run names and table reader), loaded from its file."""
    name = "confirm_rescale_nfcorpus_analysis"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, HERE / "analysis.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module          # dataclasses look their module up
        spec.loader.exec_module(module)
    return sys.modules[name]


A = _analysis()
StudyError = A.StudyError


def _records(path: Path) -> list[dict]:
    if not path.is_file():
        raise StudyError(f"{path}: missing")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _yaml(path: Path) -> dict:
    import yaml

    if not path.is_file():
        raise StudyError(f"{path}: missing")
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _spread(values: dict[int, float]) -> dict:
    """Per seed, mean, lowest and highest."""
    return {"per_seed": {str(s): v for s, v in values.items()}, "mean": A.mean(values), "low": min(values.values()),
            "high": max(values.values())}


def committed_facts(repo: Path) -> dict:
    """Everything of the regime that the committed files alone give (no qrels): scores, training, confounds, grid."""
    dev, test = A.per_seed(repo / DEV_TABLE), A.per_seed(repo / TEST_TABLE)
    bm25 = test["bm25"][1]
    scores = {"test_means": {a: A.mean(test[a]) for a in (*A.ARMS, "bm25")},
              "dev_means": {a: A.mean(dev[a]) for a in (*A.ARMS, "bm25")},
              "bm25": bm25, "fraction_of_bm25": {a: A.mean(test[a]) / bm25 for a in A.ARMS}}
    # training: the configs, the logs' last step and last-10 ranking loss, the searched vectors
    from lsr_eval.train.stability import TOLERANCE, WINDOW, stability

    configs = {A.run_name(a, s): _yaml(repo / "results/train" / A.run_name(a, s) / "config.yaml")
               for a in A.ARMS for s in A.SEEDS}
    settings = {(c["train"]["steps"], c["train"]["batch_size"], c["data"]["n_negatives"], c["loss"]["in_batch"],
                 c["optim"]["lr"]) for c in configs.values()}
    if len(settings) != 1:
        raise StudyError(f"the 18 configs differ in steps, batch, negatives or learning rate: {sorted(settings)}")
    steps, batch, negatives, in_batch, lr = settings.pop()
    candidates = batch * (1 + negatives) if in_batch else 1 + negatives
    if candidates != A.CANDIDATES:
        raise StudyError(f"the configs give {candidates} InfoNCE candidates, the analysis {A.CANDIDATES}")
    last_step, rank_last, active_d, active_q, searched = {}, {}, {}, {}, set()
    for a in A.ARMS:
        rank_last[a], active_d[a], active_q[a] = {}, {}, {}
        for s in A.SEEDS:
            name = A.run_name(a, s)
            records = _records(repo / "results/train" / name / "log.jsonl")
            final = max(records, key=lambda r: r["step"])
            last_step[name] = final["step"]
            rank_last[a][s] = stability(records, candidates).last_rank
            active_d[a][s], active_q[a][s] = float(final["active_dims_d"]), float(final["active_dims_q"])
            manifest = A._json(repo / STUDY / "runs" / name / "test" / "manifest.json")
            st = manifest["experiment"]["settings"]
            searched.add((st["doc_top_k"], st["query_top_k"], manifest["vectors"]["documents"]["avg_active_dims"],
                          manifest["vectors"]["queries_avg_active_dims"],
                          manifest["counts"]["encoding"]["documents_in"]))
    if set(last_step.values()) != {steps}:
        raise StudyError(f"a log does not end at the configured step {steps}: {last_step}")
    if len(searched) != 1:
        raise StudyError(f"the 18 test searches differ in caps, vector sizes or corpus: {sorted(searched)}")
    doc_cap, query_cap, doc_terms, query_terms, documents = searched.pop()
    uniform = math.log(candidates)
    bound = (1 - TOLERANCE) * uniform
    training = {
        "steps": steps, "batch_size": batch, "examples": steps * batch, "documents_per_query": 1 + negatives,
        "candidates": candidates, "lr": lr,
        "final_active_terms": {a: {"documents": _spread(active_d[a]), "queries": _spread(active_q[a])}
                               for a in A.ARMS},
        "caps": {"documents": doc_cap, "queries": query_cap},
        "searched_vectors": {"documents": doc_terms, "queries": query_terms},
        "corpus_documents": documents,
        "rank_loss_last": {a: _spread(rank_last[a]) for a in A.ARMS}, "window": WINDOW,
        "uniform_loss": uniform, "collapsed_bound": bound,
        "treatment_margin_below_bound": {str(s): bound - v for s, v in rank_last[TREATMENT].items()},
    }
    # the three confounds: inspect-head at step 0, and the compensated configs
    rows = {int(r["k"]): r for r in A._json(repo / A.INSPECT)["rows"]}
    k = A.K_OF[TREATMENT]
    c = configs[A.run_name(TREATMENT, 1)]["model"]
    confounds = {
        "k": k, "scale_bias": c["scale_bias"], "tied_input": c["tied_input"], "rescale_k": c["rescale_k"],
        "mean_max_logit": {"1": rows[1]["mean_max_logit"], str(k): rows[k]["mean_max_logit"]},
        "cross_text_score": {"1": rows[1]["mean_score"], str(k): rows[k]["mean_score"]},
        "score_ratio": rows[1]["mean_score"] / rows[k]["mean_score"],
        "active_fraction": {"1": rows[1]["active_fraction"], str(k): rows[k]["active_fraction"]},
    }
    # the k grid: k = 8 against k = 1 by seed, and where the best k sits
    grid = {
        "k": sorted(A.K_OF.values()),
        "chosen": A._json(repo / STUDY / "dev-choice.json")["best_compensated"],
        "below_minus_baseline": {split: {str(s): v[LARGEST_BELOW][s] - v[BASELINE][s] for s in A.SEEDS}
                                 for split, v in (("test", test), ("dev", dev))},
    }
    grid["chosen_is_largest"] = A.K_OF[grid["chosen"]] == max(grid["k"])
    return {"scores": scores, "training": training, "confounds": confounds, "grid": grid}


def judged_facts(repo: Path, data: Path) -> dict:
    """What needs NFCorpus's qrels: each run's share of test queries with nDCG@10 = 0, and the expected nDCG@10 of a
    uniformly random ranking of the corpus, both with the toolkit's evaluation; the qrels and corpus fingerprints
    must be those the committed test table recorded."""
    import lsr_eval
    from lsr_eval.data.fingerprint import corpus_fingerprint, qrels_fingerprint
    from lsr_eval.evaluation.evaluate import evaluate
    from lsr_eval.runs.trec import read_run

    ds = lsr_eval.load_dataset(str(data), split="test")
    qrels = ds.qrels()
    recorded = A._json(repo / TEST_TABLE / "manifest.json")["data"]["nfcorpus"]
    corpus = {k: v for k, v in corpus_fingerprint(ds.corpus_key()).items() if k in ("bytes", "sha256")}
    if qrels_fingerprint(qrels) != recorded["qrels"] or corpus != {k: recorded["corpus"][k] for k in corpus}:
        raise StudyError(f"{data}: its test qrels or corpus are not those of {TEST_TABLE} (fingerprints differ)")
    table = {r["system"]: r for r in A._json(repo / TEST_TABLE / "table.json")}
    zero: dict[str, dict[int, float]] = {}
    for a in A.ARMS:
        zero[a] = {}
        for s in A.SEEDS:
            name = A.run_name(a, s)
            per_query = evaluate(qrels, read_run(repo / STUDY / "runs" / name / "test" / "run.trec.xz"),
                                 [A.MEASURE], per_query=True)[A.MEASURE]
            mean = math.fsum(per_query.values()) / len(per_query)
            if abs(mean - table[name][A.MEASURE]) > 1e-9:
                raise StudyError(f"{name}: nDCG@10 {mean} here, {table[name][A.MEASURE]} in {TEST_TABLE}")
            zero[a][s] = sum(1 for v in per_query.values() if v == 0.0) / len(per_query)
    documents = [d.id for d in ds.docs()]
    return {"queries": len(qrels), "zero_share": {a: _spread(zero[a]) for a in A.ARMS},
            "random": random_ndcg(qrels, documents),
            "train_queries": len(lsr_eval.load_dataset(str(data), split="train").qrels()),
            "qrels": qrels_fingerprint(qrels), "corpus": {**corpus, "documents": len(documents)}}


def random_ndcg(qrels: dict[str, dict[str, int]], documents: list[str], cutoff: int = CUTOFF) -> float:
    """The expected nDCG@``cutoff`` of a uniformly random ranking of ``documents``, averaged over the queries of
    ``qrels`` (an expectation, not a sample). Each rank holds each document with probability 1/N, so
    E[DCG@c] = (mean gain over the corpus) x sum_{r <= min(c, N)} 1/log2(r + 1), gain = grade where grade >= 1 (the
    toolkit's); the query's ideal DCG@c is the toolkit's too: a one-document run that ranks its best-graded
    document first scores g / IDCG."""
    from lsr_eval.evaluation.evaluate import evaluate

    measure = f"nDCG@{cutoff}"
    discounts = math.fsum(1 / math.log2(r + 1) for r in range(1, min(cutoff, len(documents)) + 1))
    corpus = set(documents)
    best = {q: max(j.items(), key=lambda item: (item[1], item[0])) for q, j in qrels.items()}
    first = evaluate(qrels, {q: {d: 1.0} for q, (d, _) in best.items()}, [measure], per_query=True)[measure]
    values = []
    for q, judged in qrels.items():
        ideal = best[q][1] / first[q]                      # g / (g / IDCG)
        gain = math.fsum(g for d, g in judged.items() if d in corpus and g >= 1) / len(documents)
        values.append(gain * discounts / ideal)
    return math.fsum(values) / len(values)


def compute(repo: Path, data: Path) -> dict:
    """The regime, with a manifest-like header, written to ``repo/OUT``."""
    from lsr_eval.manifest import git_commit

    out = {"what": "the regime of the confirmatory rescaling study's result: absolute scores, zero-score "
                   "shares, training length and final vector sizes, the compensated recipe's three confounds, the "
                   "k grid; the registered verdicts are not recomputed here",
           "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
           "commit": git_commit(repo), "command": ["studies/confirm_rescale_nfcorpus/regime.py", "compute"],
           "inputs": {"tables": [DEV_TABLE, TEST_TABLE],
                      "runs": f"{STUDY}/runs/<run>/test/{{run.trec.xz,manifest.json}}",
                      "training": "results/train/<run>/{log.jsonl,config.yaml}", "inspect_head": A.INSPECT,
                      "dev_choice": f"{STUDY}/dev-choice.json",
                      "data": "beir/nfcorpus (qrels/test.tsv, qrels/train.tsv, corpus.jsonl)"},
           "evaluation": "lsr_eval.evaluation.evaluate.evaluate, nDCG@10 as trec_eval -c (ranx's formulas): gain = "
                         "grade, discount log2(rank + 1), ideal DCG from the query's judged grades, mean over the "
                         "judged queries",
           **committed_facts(repo), "judged": judged_facts(repo, data)}
    path = repo / OUT
    path.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    return out


# ---------------------------------------------------------------------------------------------------------------
# the pages' blocks

def _n(x: float) -> str:
    """A count with thousands separators."""
    return f"{round(x):,}"


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _numbers(r: dict) -> dict[str, str]:
    """Every number the blocks print, formatted once."""
    s, t, c, g, j = r["scores"], r["training"], r["confounds"], r["grid"], r["judged"]
    k = str(c["k"])
    z = j["zero_share"]
    d_treat, d_base = (t["final_active_terms"][a]["documents"] for a in (TREATMENT, BASELINE))
    q_treat, q_base = (t["final_active_terms"][a]["queries"] for a in (TREATMENT, BASELINE))
    loss = t["rank_loss_last"][TREATMENT]["per_seed"]
    margin = t["treatment_margin_below_bound"]
    below = g["below_minus_baseline"]
    return {
        "treat": f"{s['test_means'][TREATMENT]:.3f}", "base": f"{s['test_means'][BASELINE]:.3f}",
        "bm25": f"{s['bm25']:.3f}", "bm25_4": f"{s['bm25']:.4f}", "random": f"{j['random']:.3f}",
        "treat_frac": f"{s['fraction_of_bm25'][TREATMENT]:.2f}", "base_frac": f"{s['fraction_of_bm25'][BASELINE]:.2f}",
        "docs": _n(t["corpus_documents"]), "queries": str(j["queries"]),
        "zero_treat": _pct(z[TREATMENT]["mean"]), "zero_base": _pct(z[BASELINE]["mean"]),
        "zero_treat_range": f"{_pct(z[TREATMENT]['low'])}-{_pct(z[TREATMENT]['high'])}",
        "zero_base_range": f"{_pct(z[BASELINE]['low'])}-{_pct(z[BASELINE]['high'])}",
        "zero_short": f"{100 * min(z[TREATMENT]['mean'], z[BASELINE]['mean']):.0f}-"
                      f"{100 * max(z[TREATMENT]['mean'], z[BASELINE]['mean']):.0f}%",
        "steps": str(t["steps"]), "batch": str(t["batch_size"]), "per_query": str(t["documents_per_query"]),
        "examples": str(t["examples"]),
        "train_queries": _n(j["train_queries"]), "pass": f"{t['examples'] / j['train_queries']:.2f}",
        "d_base": f"{_n(d_base['low'])}-{_n(d_base['high'])}", "d_treat": f"{_n(d_treat['low'])}-{_n(d_treat['high'])}",
        "q_base": f"{_n(q_base['low'])}-{_n(q_base['high'])}", "q_treat": f"{_n(q_treat['low'])}-{_n(q_treat['high'])}",
        "doc_cap": str(t["caps"]["documents"]), "query_cap": str(t["caps"]["queries"]),
        "loss": ", ".join(f"{loss[str(x)]:.3f}" for x in A.SEEDS), "uniform": f"{t['uniform_loss']:.3f}",
        "candidates": str(t["candidates"]), "bound": f"{t['collapsed_bound']:.3f}",
        "margin_s1": f"{margin['1']:.3f}", "window": str(t["window"]),
        "k": k, "k2": str(c["k"] ** 2), "logit_1": f"{c['mean_max_logit']['1']:.2f}",
        "logit_k": f"{c['mean_max_logit'][k]:.2f}", "score_1": _n(c["cross_text_score"]["1"]),
        "score_k": f"{c['cross_text_score'][k]:.1f}", "score_ratio": f"{c['score_ratio']:.0f}",
        "active_1": _pct(c["active_fraction"]["1"]), "active_k": _pct(c["active_fraction"][k]),
        "lr": f"{t['lr']:.0e}".replace("e-0", "e-"),
        "below_test": ", ".join(f"{below['test'][str(x)]:+.4f}" for x in A.SEEDS),
        "below_dev": ", ".join(f"{below['dev'][str(x)]:+.4f}" for x in A.SEEDS),
        "test_means_grid": ", ".join(f"{s['test_means'][a]:.4f}" for a in (BASELINE, *A.COMPENSATED)),
        "kmax": str(max(g["k"])), "grid": ", ".join(str(x) for x in g["k"]),
    }


def _sentences(r: dict) -> dict[str, str]:
    """The regime's sentences, each with its numbers (shared by the pages)."""
    n = _numbers(r)
    if not (r["grid"]["chosen"] == TREATMENT and r["grid"]["chosen_is_largest"]):
        raise StudyError("the blocks' wording assumes the chosen k is k = 16, the grid's largest; it is not")
    return {
        "scores": f"On NFCorpus test (nDCG@10, mean of 3 seeds) compensated k = {n['k']} scores {n['treat']} and "
                  f"k = 1 {n['base']}, against BM25's {n['bm25']} ({n['treat_frac']} and {n['base_frac']} of it) "
                  f"and the {n['random']} a uniformly random ranking of the {n['docs']} documents scores in "
                  f"expectation; {n['zero_treat']} (k = {n['k']}; {n['zero_treat_range']} by seed) and "
                  f"{n['zero_base']} (k = 1; {n['zero_base_range']}) of the {n['queries']} test queries score 0.",
        "steps": f"Training stops at {n['steps']} steps of {n['batch']} queries ({n['examples']} of NFCorpus "
                  f"train's {n['train_queries']} queries, {n['pass']} of a pass). At the last step a training "
                  f"vector still holds, on average over its batch, {n['d_base']} active terms (documents) and "
                  f"{n['q_base']} (queries) at k = 1, {n['d_treat']} and {n['q_treat']} at k = {n['k']}, so the "
                  f"top-{n['doc_cap']} / "
                  f"top-{n['query_cap']} cut at encoding, which every searched vector reaches, decides what is "
                  f"retrieved, not learned sparsity.",
        "chance": f"k = {n['k']}'s ranking loss stays near chance: its last-{n['window']}-step means are "
                  f"{n['loss']} against ln {n['candidates']} = {n['uniform']} (a batch ranks {n['batch']} queries "
                  f"x {n['per_query']} documents, {n['candidates']} candidates whatever k), and seed 1 misses the "
                  f"registered "
                  f"\"collapsed\" bound ({n['bound']}) by {n['margin_s1']}.",
        "temperature": f"The logits shrink by k and the scores by about k\u00b2, like a softmax temperature "
                       f"(inspect-head at step 0: mean max logit {n['logit_1']} \u2192 {n['logit_k']}, cross-text "
                       f"score {n['score_1']} \u2192 {n['score_k']}, \u00f7{n['score_ratio']} against "
                       f"k\u00b2 = {n['k2']}).",
        "bias": f"The head's bias is not divided, so its share of each logit grows (active vocabulary at step 0: "
                f"{n['active_1']} \u2192 {n['active_k']}).",
        "embeddings": f"The tied embeddings, stored as E/k and multiplied back by k, move about k times faster "
                      f"under the same AdamW learning rate ({n['lr']}).",
        "grid": f"The effect is not a trend in k: on test k = {n['grid']} score {n['test_means_grid']}; k = 8 "
                f"minus k = 1 is negative on every test seed ({n['below_test']}; on dev {n['below_dev']}), then "
                f"k = {n['k']} jumps, "
                f"and the best k is the grid's largest ({n['kmax']}), so the optimum may lie beyond it.",
    }


def render(r: dict, page: str) -> str:
    """The regime block of ``page`` (``readme``, ``results`` or ``study``), markers included."""
    n, s = _numbers(r), _sentences(r)
    confounds = "Compensated rescaling changes three things at once."
    if page == "readme":
        body = (f"That effect was measured far from a useful retriever: {n['steps']} training steps, compensated "
                f"k = {n['k']} at {n['treat']} and k = 1 at {n['base']} nDCG@10 on NFCorpus test against BM25's "
                f"{n['bm25']} (random: {n['random']}), {n['zero_short']} of queries scoring 0, vectors cut to "
                f"{n['doc_cap']} / {n['query_cap']} terms, and a recipe that changes the score scale, the bias's "
                f"share and the embeddings' step size at once ([the regime]({LINK})).")
    elif page == "results":
        body = (f"The regime of that result. {s['scores']} {s['steps']} {s['chance']} {confounds} "
                f"{s['temperature']} {s['bias']} {s['embeddings']} {s['grid']} (`studies/confirm_rescale_nfcorpus/"
                f"regime.py`, `{OUT}`; the study's page, \"The regime of the result\".)")
    elif page == "study":
        body = "\n".join([
            f"What the confirmed +0.040 was measured in (`studies/confirm_rescale_nfcorpus/regime.py`, from the "
            f"committed runs, logs and tables and NFCorpus's qrels: `{OUT}`). The verdicts above stand as "
            f"registered; these sentences say where they hold.", "",
            f"- **Absolute scores.** {s['scores']}",
            f"- **Training length and sparsity.** {s['steps']} {s['chance']}",
            f"- **Three confounds.** {confounds} (1) {s['temperature']} (2) {s['bias']} (3) {s['embeddings']} "
            f"H1 compares recipes, and cannot say which of the three makes the difference.",
            f"- **The k grid.** {s['grid']}"])
    else:
        raise StudyError(f"render: unknown page {page!r} (known: {', '.join(PAGES)})")
    return "\n".join([BEGIN, *(_wrap(line) for line in body.split("\n")), END])


def _wrap(line: str) -> str:
    """A paragraph or a bullet wrapped as the pages are (at most WIDTH characters, bullets' lines indented)."""
    import textwrap

    indent = "  " if line.startswith("- ") else ""
    return textwrap.fill(line, WIDTH, subsequent_indent=indent, break_long_words=False,
                         break_on_hyphens=False) if line else line


def shown(text: str) -> str | None:
    """The regime block a page's ``text`` holds, markers included (None when it has none)."""
    if BEGIN not in text or END not in text:
        return None
    return text[text.index(BEGIN):text.index(END) + len(END)]


def check_page(text: str, r: dict, page: str) -> list[str]:
    """Problems of a page's ``text`` against the block rendered from ``r`` (empty: it shows the block, exactly)."""
    block = shown(text)
    if block is None:
        return [f"{PAGES[page]}: no regime block ({BEGIN} ... {END})"]
    if text.count(BEGIN) != 1:
        return [f"{PAGES[page]}: {text.count(BEGIN)} regime blocks"]
    expected = render(r, page)
    if block == expected:
        return []
    for got, want in zip(block.split(), expected.split()):
        if got != want:
            return [f"{PAGES[page]}: the regime block says {got!r} where regime.json gives {want!r}"]
    return [f"{PAGES[page]}: the regime block differs from the rendered one in its length"]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("stage", choices=["compute", "render", "write", "check"])
    p.add_argument("page", nargs="?", choices=list(PAGES))
    p.add_argument("--repo", type=Path, default=Path("."))
    p.add_argument("--data", type=Path, default=Path(DATA))
    args = p.parse_args(argv)
    try:
        if args.stage == "compute":
            r = compute(args.repo, args.data)
            print(json.dumps({k: r[k] for k in ("scores", "judged")}, indent=1)[:3000])
            return 0
        r = A._json(args.repo / OUT)
        if args.stage == "render":
            if args.page is None:
                raise StudyError(f"render: name a page ({', '.join(PAGES)})")
            print(render(r, args.page))
            return 0
        if args.stage == "write":
            for page, path in PAGES.items():
                text = (args.repo / path).read_text(encoding="utf-8")
                if shown(text) is None:
                    raise StudyError(f"{path}: no regime block to replace; put {BEGIN} and {END} where it goes")
                (args.repo / path).write_text(text.replace(shown(text), render(r, page)), encoding="utf-8")
            return 0
        problems = [x for page, path in PAGES.items()
                    for x in check_page((args.repo / path).read_text(encoding="utf-8"), r, page)]
        for x in problems:
            print(x, file=sys.stderr)
        if not problems:
            print(f"the regime block of {', '.join(PAGES.values())} is the one regime.json renders")
        return 1 if problems else 0
    except StudyError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
