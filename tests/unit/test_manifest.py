import json

from lsr_eval.manifest import write_json


def test_write_json_replaces_a_file_whole_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "a.json"
    write_json(path, {"b": 1})
    write_json(path, {"b": 2}, indent=None)
    assert path.read_text() == '{"b": 2}\n'
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]


def test_write_json_writes_through_a_symlink(tmp_path):
    # a config kept elsewhere and linked into a run folder: the link stays, its target gets the new content
    target = tmp_path / "kept" / "config.json"
    target.parent.mkdir()
    target.write_text("{}")
    link = tmp_path / "config.json"
    link.symlink_to(target)
    write_json(link, {"k": 1})
    assert link.is_symlink() and json.loads(target.read_text()) == {"k": 1}
