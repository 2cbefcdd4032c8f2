"""``docs/settings.md`` and the command line's help are read from the declarations."""

from __future__ import annotations

import argparse
from pathlib import Path

from lsr_eval.commands import settings as settings_command
from lsr_eval.commands._model_args import add_model_arguments
from lsr_eval.pipeline.settings import EncodeOptions, LoadOptions
from lsr_eval.settings import declared
from lsr_eval.settings.docs import markdown

REPO = Path(__file__).resolve().parents[3]


def test_the_settings_page_is_current():
    page = markdown(settings_command.sections(), settings_command.TITLE, settings_command.INTRO)
    assert (REPO / "docs" / "settings.md").read_text() == page, \
        "docs/settings.md is stale: lsr-eval settings --markdown > docs/settings.md"


def test_every_declared_setting_is_on_the_page():
    page = (REPO / "docs" / "settings.md").read_text()
    for _, _, cls in settings_command.sections():
        for f, _, s in declared(cls):
            assert f"| `{f.name}` |" in page and s.help in page, (cls.__name__, f.name)


def test_option_help_is_the_declaration():
    p = argparse.ArgumentParser()
    add_model_arguments(p)
    helps = {a.dest: a.help for a in p._actions}
    for cls, name in ((LoadOptions, "rescale_k"), (LoadOptions, "precision"), (EncodeOptions, "batch_size"),
                      (EncodeOptions, "doc_top_k")):
        (s,) = [s for f, _, s in declared(cls) if f.name == name]
        assert helps[name].startswith(s.help), (name, helps[name])
    assert "(an integer >= 1; default 32)" in helps["batch_size"]
    assert "one of auto, fp32, bf16; default fp32" in helps["precision"]
