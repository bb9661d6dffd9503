"""Tier keys: typed inside the engine, the certificate's names at the edges, one the other's text."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from optisched.errors import InputError
from optisched.optimal.options import parse_weights
from optisched.optimal.tier_key import TierKey, TierKind
from optisched.optimal.tier_labels import tier_label
from optisched.optimal.tiers import SCORE_SCALE, Tier, tier_unit


@pytest.mark.parametrize("key,name", [
    (TierKey.placed(1000), "placed[priority=1000]"),
    (TierKey.placed(-10), "placed[priority=-10]"),
    (TierKey.placed(0), "placed[priority=0]"),
    (TierKey(TierKind.PDB_VIOLATIONS), "pdb-violations"),
    (TierKey(TierKind.DISRUPTION), "disruption"),
    (TierKey.user("pack"), "objective:pack"),
    (TierKey.user("excess[cpu=50,memory=60]"), "objective:excess[cpu=50,memory=60]"),
    (TierKey(TierKind.SCORE), "score"),
    (TierKey.weighted(), "weighted"),
    (TierKey.weighted(TierKey.placed(5)), "weighted:placed[priority=5]"),
    (TierKey.weighted(TierKey.user("pack")), "weighted:objective:pack"),
    (TierKey("victimPrioritySum"), "victimPrioritySum"),
], ids=lambda v: str(v))
def test_a_key_is_named_as_the_certificate_names_it_and_parses_back(key, name):
    assert str(key) == name
    assert TierKey.parse(name) == key
    assert hash(TierKey.parse(name)) == hash(key)


@pytest.mark.parametrize("name", ["placed[priority=05]", "placed[priority=-0]", "placed[priority=]",
                                  "placed[priority=1.5]", "placed"], ids=lambda v: v)
def test_a_name_of_no_placement_tier_form_is_no_level(name):
    key = TierKey.parse(name)
    assert key.level is None and not key.is_level and str(key) == name


def test_a_kind_built_from_the_enum_or_from_text_is_one_key():
    assert TierKey(TierKind.DISRUPTION) == TierKey("disruption")
    assert {TierKey(TierKind.SCORE): 1}[TierKey.parse("score")] == 1
    assert type(TierKey(TierKind.SCORE).kind) is str


@pytest.mark.parametrize("fields", [
    {"kind": "score", "level": 3}, {"kind": "placed", "objective": "pack"},
    {"kind": "disruption", "part": TierKey("score")},
], ids=["a level on the score", "an objective's name on a placement tier", "a weighted part on disruption"])
def test_a_field_of_another_kind_of_tier_is_refused(fields):
    with pytest.raises(ValueError, match="a level is a placement tier's"):
        TierKey(**fields)


keys = st.recursive(
    st.one_of(st.integers(-2**31, 2**31 - 1).map(TierKey.placed),
              st.sampled_from([TierKind.PDB_VIOLATIONS, TierKind.DISRUPTION, TierKind.SCORE]).map(TierKey),
              st.text(st.characters(blacklist_categories=["Cs"]), min_size=1).map(TierKey.user)),
    lambda inner: inner.map(TierKey.weighted), max_leaves=3)


@given(keys)
def test_every_key_parses_back_from_its_name(key):
    assert TierKey.parse(str(key)) == key


@given(st.text(st.characters(blacklist_categories=["Cs"])))
def test_every_name_is_the_text_of_the_key_it_parses_to(name):
    assert str(TierKey.parse(name)) == name


def test_the_outcome_names_its_tier_by_its_key():
    tier = Tier(TierKey.weighted(TierKey(TierKind.SCORE)), "max", 300, 300, "VALUE", 0.0)
    assert tier.name == "weighted:score" and tier.to_dict()["name"] == "weighted:score"
    assert tier_unit(tier.key) == ("score points", SCORE_SCALE)
    assert tier_label(tier.key) == tier_label("weighted:score") == "score, weighted"
    assert Tier(TierKey.placed(7), "max", 1, 2, "FEASIBLE", 0.0).useful_bound  # a count of pods: always


@pytest.mark.parametrize("weights,message", [
    ({"placed[priority=05]": 1}, "'placed[priority=05]' is not a tier"),
    ({"pdb-violations": 1}, "'pdb-violations' is not a tier"),
    ({"placed[priority=x]": 1}, "'placed[priority=x]' is not a tier"),
], ids=["a level written with a leading zero", "a tier weights do not cover", "a level that is no integer"])
def test_weights_name_tiers_by_the_certificates_names(weights, message):
    with pytest.raises(InputError, match=message.replace("[", r"\[")):
        parse_weights(weights)


def test_weights_keep_the_names_they_are_given():
    assert parse_weights({"placed": 1000, "placed[priority=-5]": 3, "objective": 2}) == (
        ("placed", 1000), ("placed[priority=-5]", 3), ("objective", 2))


@pytest.mark.parametrize("key,weight", [
    (TierKey.placed(5), 3), (TierKey.placed(0), 1000), (TierKey.user("pack"), 2), (TierKey(TierKind.SCORE), 1),
    (TierKey(TierKind.DISRUPTION), 0), (TierKey(TierKind.PDB_VIOLATIONS), 0),
], ids=["a level's own weight", "a level without one takes placed's", "an objective takes objective's",
        "the score its own", "a tier without a weight is left out", "pdb-violations takes none"])
def test_a_tier_weighs_by_its_own_weight_else_its_kinds(key, weight):
    from optisched.optimal.tier_loop import _weight_of

    given_ = parse_weights({"placed": 1000, "placed[priority=5]": 3, "objective": 2, "score": 1})
    assert _weight_of({TierKey.parse(name): w for name, w in given_}, key) == weight
