"""The embedded tokenizer and tiny model, and both roads through ``load_policy``."""

import pytest
import torch

from countdown_study.policy import (
    EMBEDDED_POLICIES,
    TinyModelConfig,
    build_model,
    build_tokenizer,
    library_bars,
    load_policy,
    policy_fingerprint,
    policy_identity,
    prompt_template,
)
from countdown_study.policy import model as policy_model
from countdown_study.training.specs import DataSpec

TRACE = "N 44 19 35 T 98 :<think>44+19=63, 63+35=98</think><answer>(44+19)+35</answer>"
SMALL = TinyModelConfig(hidden_size=32, num_layers=1, num_heads=2, intermediate_size=64)


def test_tokenizer_is_character_level_with_one_token_per_tag():
    tok = build_tokenizer()
    ids = tok(TRACE, add_special_tokens=False)["input_ids"]
    assert tok.decode(ids) == TRACE
    assert len(ids) == len(TRACE) - sum(len(t) - 1 for t in ("<think>", "</think>", "<answer>", "</answer>"))
    assert tok.convert_ids_to_tokens(ids[:3]) == ["N", " ", "4"]
    assert tok.unk_token_id in tok("N 1 é", add_special_tokens=False)["input_ids"]


def test_default_model_is_about_3m_parameters_and_untied():
    model = build_model(build_tokenizer())
    n_params = sum(p.numel() for p in model.parameters())
    assert 3_000_000 <= n_params <= 5_000_000
    assert model.get_input_embeddings().weight.data_ptr() != model.get_output_embeddings().weight.data_ptr()
    assert prompt_template(model) == "compact"


@pytest.mark.parametrize(
    "shape",
    [
        TinyModelConfig(),  # embedded: 3,429,120
        SMALL,
        TinyModelConfig(hidden_size=128, num_layers=4, num_heads=4, intermediate_size=384),
        TinyModelConfig(hidden_size=384, num_layers=6, num_heads=6, intermediate_size=1152),
    ],
    ids=["embedded", "test-shape", "small", "large"],
)
def test_the_parameter_count_of_a_shape_is_that_of_the_model_built(shape):
    model = build_model(build_tokenizer(), shape)
    assert shape.num_parameters == sum(p.numel() for p in model.parameters())
    assert len(build_tokenizer()) == policy_model.VOCAB_SIZE


def test_the_embedded_parameter_count_worked_example():
    # 2 x 31 x 256 embeddings + 4 x (3 x (256^2 + 256) + 256^2 + 3 x 256 x 768 + 2 x 256) + 256
    assert TinyModelConfig().num_parameters == 15_872 + 4 * 853_248 + 256 == 3_429_120


def test_build_model_is_seeded():
    tok = build_tokenizer()
    a, b, c = (
        build_model(tok, SMALL, seed=1),
        build_model(tok, SMALL, seed=1),
        build_model(tok, SMALL, seed=2),
    )
    assert all(
        torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values(), strict=True)
    )
    assert not torch.equal(a.lm_head.weight, c.lm_head.weight)


def test_local_folder_road_round_trips_model_and_tokenizer(tmp_path):
    tok = build_tokenizer()
    model = build_model(tok, SMALL, seed=0)
    model.save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    loaded, loaded_tok = load_policy(tmp_path)
    ids = tok(TRACE, return_tensors="pt")["input_ids"]
    assert loaded_tok(TRACE)["input_ids"] == ids[0].tolist()  # spaces kept: not re-wrapped as Qwen2 BPE
    assert loaded_tok.padding_side == "left"
    with torch.no_grad():
        assert torch.allclose(model(ids).logits, loaded(ids).logits)
    assert prompt_template(loaded) == "compact"
    assert not loaded.training


def test_policy_fingerprint_follows_the_weights_not_the_name(tmp_path):
    tok = build_tokenizer()
    build_model(tok, SMALL, seed=0).save_pretrained(tmp_path / "a")
    build_model(tok, SMALL, seed=0).save_pretrained(tmp_path / "b")
    build_model(tok, SMALL, seed=1).save_pretrained(tmp_path / "c")
    first = policy_fingerprint(tmp_path / "a")
    assert first.startswith("sha256:") and len(first) == len("sha256:") + 16
    assert policy_fingerprint(tmp_path / "b") == first  # same weights in another folder
    assert policy_fingerprint(tmp_path / "c") != first
    build_model(tok, SMALL, seed=1).save_pretrained(tmp_path / "a")  # new weights under the old name
    assert policy_fingerprint(tmp_path / "a") == policy_fingerprint(tmp_path / "c")
    assert policy_fingerprint("embedded").startswith("sha256:")
    assert (
        policy_fingerprint("asingh15/qwen-sft-countdown-defaultproj")
        == "asingh15/qwen-sft-countdown-defaultproj"
    )
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="no weight files"):
        policy_fingerprint(tmp_path / "empty")


def test_both_shipped_policies_load_by_name_and_differ():
    embedded, tok = load_policy("embedded")
    search, search_tok = load_policy("embedded-search")
    assert EMBEDDED_POLICIES["embedded-search"].parent == EMBEDDED_POLICIES["embedded"].parent
    assert prompt_template(search) == "compact" and not search.training
    assert search_tok.get_vocab() == tok.get_vocab()
    assert embedded.config.to_dict()["hidden_size"] == search.config.to_dict()["hidden_size"]
    assert not torch.equal(embedded.lm_head.weight, search.lm_head.weight)
    assert policy_fingerprint("embedded-search") != policy_fingerprint("embedded")
    assert policy_identity(DataSpec(policy="embedded-search").policy) == {
        "policy": policy_fingerprint(EMBEDDED_POLICIES["embedded-search"])
    }
    weights = sum(f.stat().st_size for f in EMBEDDED_POLICIES["embedded-search"].iterdir())
    assert weights < 15_000_000


@pytest.mark.parametrize(
    ("name", "recipe"),
    [("embedded-search", "search"), ("embedded-small", "small"), ("embedded-large", "large")],
)
def test_a_missing_shipped_policy_names_the_command_that_makes_it(tmp_path, monkeypatch, name, recipe):
    monkeypatch.setitem(policy_model.EMBEDDED_POLICIES, name, tmp_path / name)
    assert not policy_model.is_shipped(name)
    message = rf"^the {name} policy is not shipped yet \(no checkpoint in .*\); make it with "
    with pytest.raises(
        FileNotFoundError, match=message + rf"`countdown-study sft --recipe {recipe} --ship`$"
    ):
        load_policy(name)
    with pytest.raises(FileNotFoundError, match=f"countdown-study sft --recipe {recipe} --ship"):
        policy_fingerprint(name)  # a run from it is refused before anything is planned


def test_is_shipped_knows_only_the_shipped_names():
    assert policy_model.is_shipped("embedded") and policy_model.is_shipped("embedded-search")
    assert not policy_model.is_shipped("embedded-huge") and not policy_model.is_shipped("Qwen/Qwen2.5-0.5B")
    assert set(policy_model.SHIP_COMMANDS) == set(EMBEDDED_POLICIES)
    assert {"embedded-small", "embedded-large"} <= set(EMBEDDED_POLICIES)


def test_shipped_scale_policies_load_by_name_as_float32():
    """Runs once ``countdown-study sft --recipe small|large --ship`` has shipped them."""
    names = [name for name in ("embedded-small", "embedded-large") if policy_model.is_shipped(name)]
    if not names:
        pytest.skip("embedded-small and embedded-large are not shipped yet")
    embedded, tok = load_policy("embedded")
    for name in names:
        model, tokenizer = load_policy(name)
        assert tokenizer.get_vocab() == tok.get_vocab() and prompt_template(model) == "compact"
        assert {p.dtype for p in model.parameters()} == {torch.float32} and not model.training
        assert policy_fingerprint(name) != policy_fingerprint("embedded")


def test_a_tokenizer_source_is_checked_as_the_policy_is_before_the_model_loads(tmp_path, monkeypatch):
    monkeypatch.setattr(
        policy_model.AutoModelForCausalLM, "from_pretrained", lambda *a, **k: pytest.fail("model loaded")
    )
    with pytest.raises(
        FileNotFoundError, match="tokenizer '/no/tok' is neither an existing folder nor a Hugging Face id"
    ):
        load_policy("embedded", tokenizer="/no/tok")
    (tmp_path / "tokenizer.json").write_text("{}")
    with pytest.raises(NotADirectoryError, match="tokenizer '.*tokenizer.json' is a file"):
        load_policy("embedded", tokenizer=str(tmp_path / "tokenizer.json"))


def test_library_bars_hide_transformers_bars_inside_the_block_and_restore_them(tmp_path, capfd):
    from transformers.utils import logging

    logging.enable_progress_bar()
    model, tokenizer = load_policy("embedded")
    capfd.readouterr()
    with library_bars(False):
        assert not logging.is_progress_bar_enabled()
        model.save_pretrained(tmp_path / "copy")
        load_policy(tmp_path / "copy", tokenizer="embedded")
    quiet = capfd.readouterr().err
    assert logging.is_progress_bar_enabled()
    load_policy(tmp_path / "copy", tokenizer="embedded")
    shown = capfd.readouterr().err
    assert "Loading weights" in shown  # the bar this test hides is there without it
    assert "Loading weights" not in quiet and "Writing model shards" not in quiet
    with library_bars(True):
        assert logging.is_progress_bar_enabled()
    logging.disable_progress_bar()
    with library_bars(False):
        pass
    assert not logging.is_progress_bar_enabled()  # hidden before: still hidden after
    logging.enable_progress_bar()
