"""A button that asks before it acts: the one confirmation step every page uses."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st


def confirm(
    key: str,
    label: str,
    question: str | Callable[[Any], str],
    yes: str,
    *,
    value: Any = True,
    disabled: bool = False,
) -> Any | None:
    """The button ``label`` (widget key ``key``); once pressed, ``question`` with ``yes`` and
    Cancel (keys ``key_yes``/``key_no``). Returns ``value`` (what was pending when the
    button was pressed) in the run where ``yes`` is clicked, else None. ``question`` may be a
    function of that pending value."""
    state = f"confirm_{key}"
    pending = st.session_state.get(state)
    if pending is None:
        if st.button(label, key=key, disabled=disabled):
            st.session_state[state] = value
            st.rerun()
        return None
    st.warning(question(pending) if callable(question) else question)
    left, right = st.columns(2)
    if left.button(yes, key=f"{key}_yes", type="primary"):
        st.session_state.pop(state, None)
        return pending
    if right.button("Cancel", key=f"{key}_no"):
        st.session_state.pop(state, None)
        st.rerun()
    return None
