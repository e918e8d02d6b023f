"""The generated reference pages equal what their generator writes today (peagle/reference_docs.py):
docs/deployment-file.md from peagle/settings/, docs/catalog.md and peagle_cdk/catalog_ids.py from
peagle/catalog/*.yaml."""

import pytest

from peagle import reference_docs
from peagle.settings import DeploymentConfig

REGENERATE = "regenerate with: .venv/bin/python -m peagle.reference_docs"
BLOCKS = [(path, block) for path, blocks in reference_docs.BLOCKS.items() for block in blocks]


def _committed_block(path, block) -> str:
    text = path.read_text(encoding="utf-8")
    begin, end = reference_docs.begin_marker(block), reference_docs.end_marker(block)
    assert text.count(begin) == 1 and text.count(end) == 1, f"{path.name}: markers of {block!r} missing; {REGENERATE}"
    return text.split(begin)[1].split(end)[0].strip("\n")


@pytest.mark.parametrize(("path", "block"), BLOCKS, ids=[f"{path.name}:{block}" for path, block in BLOCKS])
def test_committed_reference_block_is_the_generated_text(path, block):
    generated = reference_docs.BLOCKS[path][block]()
    assert _committed_block(path, block) == generated, f"docs/{path.name} block {block!r} is stale; {REGENERATE}"


def test_check_mode_passes_on_the_committed_pages():
    assert reference_docs.stale_pages() == []
    assert reference_docs.stale_files() == []
    assert reference_docs.main(["--check"]) == 0


def test_the_catalog_constants_are_every_catalog_id_and_a_new_pair_makes_them_stale(monkeypatch, capsys):
    from peagle.catalog import load_catalog
    from peagle_cdk import InstanceTypes, ModelPairs, Profiles

    catalog = load_catalog()
    values = lambda cls: sorted(v for k, v in vars(cls).items() if k.isupper())  # noqa: E731
    assert values(ModelPairs) == sorted(catalog.pairs) and ModelPairs.GPT_OSS_20B == "gpt-oss-20b"
    assert values(InstanceTypes) == sorted(catalog.instances) and InstanceTypes.G6E_XLARGE == "ml.g6e.xlarge"
    assert values(Profiles) == sorted(catalog.profiles) and Profiles.CHATBOT == "chatbot"

    real = reference_docs.load_catalog
    monkeypatch.setattr(
        reference_docs,
        "load_catalog",
        lambda: real().model_copy(update={"pairs": {**real().pairs, "new-pair": real().pairs["qwen3-8b"]}}),
    )
    assert reference_docs.stale_files() == [reference_docs.ROOT / "peagle_cdk" / "catalog_ids.py"]
    assert reference_docs.main(["--check"]) == 1
    assert "stale: peagle_cdk/catalog_ids.py" in capsys.readouterr().err


def test_check_mode_names_a_page_whose_description_changed(monkeypatch, capsys):
    monkeypatch.setattr(DeploymentConfig.model_fields["model"], "description", "changed in the model, not the page")
    path = reference_docs.DOCS / "deployment-file.md"
    assert path in reference_docs.stale_pages()
    assert reference_docs.main(["--check"]) == 1
    assert "stale: docs/deployment-file.md (regenerate: python -m peagle.reference_docs)" in capsys.readouterr().err


def test_every_deployment_file_key_is_documented():
    text = (reference_docs.DOCS / "deployment-file.md").read_text(encoding="utf-8")

    def walk(model, seen=()):
        for name, info in model.model_fields.items():
            yield model, name
            for nested in reference_docs.nested_models(info.annotation):
                if nested not in seen:
                    yield from walk(nested, (*seen, nested))

    for model, name in walk(DeploymentConfig):
        assert f"| `{name}` |" in text, f"{model.__name__}.{name} missing from docs/deployment-file.md; {REGENERATE}"


def test_yaml_markers_find_estimates_and_unverified_numbers():
    markers = reference_docs.yaml_markers(reference_docs.PAIRS_YAML.read_text(encoding="utf-8"))
    assert markers[("pairs", "qwen3-8b", "drafter", "trained_k")] == "unverified"
    assert markers[("pairs", "qwen3-8b", "drafter", "weight_bytes")] == "estimate"
    assert ("pairs", "gpt-oss-20b", "drafter", "weight_bytes") not in markers


def test_render_refuses_a_page_without_its_markers():
    with pytest.raises(reference_docs.MarkerError, match="BEGIN GENERATED: pairs"):
        reference_docs.render("no markers here\n", {"pairs": reference_docs.catalog_pairs})
