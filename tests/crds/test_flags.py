from crds import flags


def test_an_annotation_is_on_only_for_true_in_any_case() -> None:
    assert [flags.is_on(v) for v in ("true", "True", "TRUE")] == [True, True, True]
    assert [flags.is_on(v) for v in (None, "", "false", "yes", "1", " true")] == [False] * 6


def test_a_boolean_is_written_as_kubernetes_text() -> None:
    assert (flags.text(True), flags.text(False)) == ("true", "false")
