"""The suite's launch() helper (tests/conftest.py): a launch that gradio refuses because its own 3-second check of
localhost timed out on a loaded machine, or because the free port was taken meanwhile, is closed and tried again."""

import pytest

from conftest import launch


class FlakyDemo:
    """Stands in for gr.Blocks: launch() fails `failures` times with what gradio raises, then succeeds."""

    def __init__(self, failures: list[Exception]):
        self.failures, self.calls, self.closed = list(failures), [], 0

    def launch(self, **options):
        self.calls.append(options)
        if self.failures:
            raise self.failures.pop(0)

    def close(self):
        self.closed += 1


def test_a_refused_launch_is_closed_and_tried_again_on_a_new_port():
    demo = FlakyDemo([ValueError("When localhost is not accessible, a shareable link must be created."),
                      OSError("Cannot find empty port")])
    url = launch(demo, ssr_mode=False)
    assert demo.closed == 2 and len(demo.calls) == 3
    assert url == f"http://127.0.0.1:{demo.calls[-1]['server_port']}"
    assert all(call["ssr_mode"] is False and call["prevent_thread_lock"] for call in demo.calls)


def test_three_refusals_in_a_row_are_reported():
    demo = FlakyDemo([ValueError("one"), ValueError("two"), ValueError("three")])
    with pytest.raises(ValueError, match="three"):
        launch(demo)
    assert demo.closed == 3
