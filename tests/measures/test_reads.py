"""Measures declare the fields of their input they read (issue 50): compute_measures hands each a view of those."""

import pandas as pd
import pytest

from bayessdc.measures import Measure, MeasureInput, compute_measures, registry
from bayessdc.measures.base import _REGISTRY, ALWAYS_READ, DERIVED_READS, MEASURE_INPUT_FIELDS, UndeclaredRead


def test_every_built_in_measure_declares_the_fields_it_reads():
    for name, cls in registry().items():
        if cls.__module__.startswith("bayessdc.measures."):
            assert cls.reads is not None, name
            assert set(cls.reads) <= MEASURE_INPUT_FIELDS - ALWAYS_READ, (name, set(cls.reads) - MEASURE_INPUT_FIELDS)
    for derived, needed in DERIVED_READS.items():
        assert set(needed) <= MEASURE_INPUT_FIELDS and derived not in MEASURE_INPUT_FIELDS


@pytest.fixture
def registered():
    """Register measures for one test only."""
    added = []

    def register(cls):
        _REGISTRY[cls.name] = cls
        added.append(cls.name)
        return cls

    yield register
    for name in added:
        _REGISTRY.pop(name)


def _input():
    original = pd.DataFrame({"a": ["x", "y", "z"]})
    return MeasureInput(original.assign(synthetic=1), original, released=["a"], holdout=original.iloc[:1])


def test_a_measure_reading_a_field_it_does_not_declare_is_stopped_naming_it(registered):
    @registered
    class Peeks(Measure):
        name, kind, reads = "peeks_at_the_holdout", "risk", ("original",)

        def applies(self, data):
            return data.original is not None

        def compute(self, data):
            return self.result([{"subset": "all", "dataset": 1, "value": float(len(data.holdout))}])

    with pytest.raises(UndeclaredRead, match="'peeks_at_the_holdout' reads MeasureInput.holdout without declaring"):
        compute_measures(_input(), ["peeks_at_the_holdout"])
    Peeks.reads = ("original", "holdout")  # declared: read
    assert compute_measures(_input(), ["peeks_at_the_holdout"])["peeks_at_the_holdout"].values["value"].item() == 1


def test_a_derived_attribute_needs_the_fields_it_reads_and_the_view_is_read_only(registered):
    @registered
    class Columns(Measure):
        name, kind, reads = "record_column_count", "utility", ("original",)

        def applies(self, data):
            return True

        def compute(self, data):
            return self.result([{"subset": "all", "dataset": 1, "value": float(len(data.record_columns))}])

    with pytest.raises(UndeclaredRead, match=r"record_columns \(which reads released, weights\)"):
        compute_measures(_input(), ["record_column_count"])
    Columns.reads = ("original", "released", "weights")
    assert compute_measures(_input(), ["record_column_count"])["record_column_count"].values["value"].item() == 1

    @registered
    class Writes(Measure):
        name, kind, reads = "writes_its_input", "utility", ()

        def applies(self, data):
            data.original = None
            return True

    with pytest.raises(AttributeError, match="read only"):
        compute_measures(_input(), ["writes_its_input"])


def test_a_measure_that_declares_nothing_reads_the_whole_input(registered):
    @registered
    class Undeclared(Measure):  # a user's measure from before the declarations: the whole input, as before
        name, kind = "undeclared_reads", "risk"

        def applies(self, data):
            return data.holdout is not None

        def compute(self, data):
            return self.result([{"subset": "all", "dataset": 1, "value": float(len(data.holdout))}])

    assert compute_measures(_input(), ["undeclared_reads"])["undeclared_reads"].values["value"].item() == 1
