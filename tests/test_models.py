"""The model loader (rag_core.providers.models): built once, loaded in the background on request.

The LLM's ``load()`` is held at a gate so the test knows where the load stands without timing."""

from __future__ import annotations

import threading

import pytest

from rag_core.providers.models import ModelLoader
from tests.fakes import ScriptedLLM


class SlowLoad(ScriptedLLM):
    """A fake whose ``load()`` (as the local model's) waits for the test and counts calls."""

    def model_post_init(self, context) -> None:
        super().model_post_init(context)
        object.__setattr__(self, "gate", threading.Event())
        object.__setattr__(self, "entered", threading.Event())
        object.__setattr__(self, "loads", 0)

    def load(self) -> None:
        object.__setattr__(self, "loads", self.loads + 1)
        self.entered.set()
        assert self.gate.wait(300)  # generous: a loaded machine may stall this test for long


def test_preload_loads_once_in_the_background_and_an_answer_waits_for_it(make_settings):
    llm = SlowLoad()
    models = ModelLoader(make_settings(), llm=llm)
    got: list[object] = []
    asking = threading.Thread(target=lambda: got.append(models.llm()))  # a question meanwhile
    try:
        assert models.preload() is True
        assert models.loading and not models.llm_ready  # loading, the page is not held up
        assert llm.entered.wait(30)  # the load is under way (and holds the load's lock)
        assert models.preload() is True  # a second page run starts nothing new, and is not held up
        asking.start()
        asking.join(0.2)
        assert asking.is_alive() and not got  # it waits for the load under way
    finally:
        llm.gate.set()  # whatever failed above, the load is never left waiting
    asking.join(30)
    assert got == [llm] and models.llm_ready and llm.loads == 1  # loaded once, for both
    assert models._preload is not None
    models._preload.join(30)
    assert models.loading == "" and models.preload() is False  # nothing left to do


def test_a_failed_background_load_is_left_to_the_first_answer(make_settings):
    class Broken(ScriptedLLM):
        def load(self) -> None:
            raise RuntimeError("model file missing")

    models = ModelLoader(make_settings(), llm=Broken())
    assert models.preload() is True
    models._preload.join(30)
    assert not models.llm_ready and models.loading == ""
    with pytest.raises(RuntimeError, match="model file missing"):  # the first answer reports it
        models.llm()
