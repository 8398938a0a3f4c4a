"""``privopt verify`` of a composite result whose spec or chosen block file was edited after the
solve: exit 2 naming the edited file, and exit 0 again once it is restored (the file's SHA-256 is
recorded in the result). On specs/blocks_choice.priv, solved in under a second; the same edits on
blocks_means (an 8 s solve) run with -m slow (test_verify_composite)."""

import shutil

from tests.conftest import SPECS, invoke


def test_an_edited_file_of_a_composite_is_exit_2_until_restored(tmp_path):
    shutil.copy(SPECS / "blocks_choice.priv", tmp_path)
    shutil.copytree(SPECS / "blocks", tmp_path / "blocks")
    solved = invoke("solve", tmp_path / "blocks_choice.priv", "--json")
    assert solved.exit_code == 0, solved.output
    result = tmp_path / "r.json"
    result.write_text(solved.stdout)
    assert invoke("verify", result).exit_code == 0
    for edited in (tmp_path / "blocks" / "ordered_release.priv", tmp_path / "blocks_choice.priv"):
        text = edited.read_text()
        edited.write_text(text + "\n# edited\n")
        checked = invoke("verify", result)
        assert checked.exit_code == 2 and edited.name in checked.output and "changed" in checked.output, checked.output
        edited.write_text(text)
        assert invoke("verify", result).exit_code == 0
