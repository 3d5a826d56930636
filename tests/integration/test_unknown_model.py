"""An unknown `model` is a 404 that lists the closest ids the caller's key may use."""

from __future__ import annotations

from collections.abc import Iterator

import openai
import pytest

from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import OTHER_KEY, RunningGateway, gateway_yaml
from tests.support.routed import MESSAGES


@pytest.fixture
def gateway(upstream: FakeUpstream, sqlite_url: str) -> Iterator[RunningGateway]:
    running = RunningGateway(gateway_yaml(upstream.url, sqlite_url))
    yield running
    running.stop()


def _not_found(client: openai.OpenAI, model: str) -> str:
    with pytest.raises(openai.NotFoundError) as caught:
        client.chat.completions.create(model=model, messages=MESSAGES)
    body = caught.value.body
    assert isinstance(body, dict) and body["code"] == "model_not_found"
    assert body["param"] == "model"
    message: str = body["message"]
    return message


def test_the_404_lists_the_valid_models_closest_first(gateway: RunningGateway) -> None:
    message = _not_found(gateway.client(), "hasty-caht")
    assert message.startswith("The model 'hasty-caht' does not exist. Valid models: hasty-chat, ")
    assert {"chat", "embed", "complete"} <= set(message.rstrip(".").split(": ")[1].split(", "))
    assert gateway.rows() == []  # still no row for an unknown configuration


def test_the_404_lists_only_what_this_key_may_use(gateway: RunningGateway) -> None:
    message = _not_found(gateway.client(OTHER_KEY), "embedd")  # bob may use chat only
    assert message == "The model 'embedd' does not exist. Valid models: chat."
