"""Qwen2.5's ChatML, written by Docent rather than by llama.cpp's template: one code path
for ``complete`` and ``chat``, a prompt testable without the model, and control tokens
quoted inside documents that cannot open a turn of their own."""

from __future__ import annotations

import re
from collections.abc import Sequence

from llama_index.core.base.llms.types import ChatMessage, MessageRole

# The system turn Qwen2.5's own chat template inserts when a conversation has none;
# the model was tuned with it, so we keep it rather than sending no system turn.
QWEN_DEFAULT_SYSTEM = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."

IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
STOP_STRINGS = [IM_END, "<|endoftext|>"]

# llama.cpp parses special tokens in the prompt, so a document quoting "<|im_start|>"
# would open a fake turn. A zero-width space after "<" keeps the text readable but
# makes it tokenize as plain text.
_SPECIAL_TOKEN_RE = re.compile(r"<(\|[A-Za-z0-9_]+\|)>")
_ZWSP = "\u200b"

_ROLE_MAP = {
    MessageRole.SYSTEM: "system",
    MessageRole.DEVELOPER: "system",
    MessageRole.USER: "user",
    MessageRole.ASSISTANT: "assistant",
    MessageRole.CHATBOT: "assistant",
    MessageRole.MODEL: "assistant",
}


def _neutralize(text: str) -> str:
    return _SPECIAL_TOKEN_RE.sub(lambda m: f"<{_ZWSP}{m.group(1)}>", text)


def messages_to_chatml(messages: Sequence[ChatMessage]) -> str:
    """Render messages as Qwen2.5 ChatML, ending with the opened assistant turn.

    Tool/function results become user turns wrapped in ``<tool_response>``, as
    Qwen's own template does. A conversation without a system turn gets Qwen's
    default one.
    """
    parts: list[str] = []
    if not messages or _ROLE_MAP.get(messages[0].role) != "system":
        parts.append(f"{IM_START}system\n{QWEN_DEFAULT_SYSTEM}{IM_END}\n")
    for message in messages:
        content = _neutralize(message.content or "")
        role = _ROLE_MAP.get(message.role)
        if role is None:  # tool / function results
            role = "user"
            content = f"<tool_response>\n{content}\n</tool_response>"
        parts.append(f"{IM_START}{role}\n{content}{IM_END}\n")
    parts.append(f"{IM_START}assistant\n")
    return "".join(parts)


def completion_to_chatml(prompt: str, system_prompt: str | None = None) -> str:
    """Wrap a bare completion prompt as one user turn (the model is chat-tuned)."""
    messages = []
    if system_prompt:
        messages.append(ChatMessage(role=MessageRole.SYSTEM, content=system_prompt))
    messages.append(ChatMessage(role=MessageRole.USER, content=prompt))
    return messages_to_chatml(messages)
