"""Streamlit helpers shared by the pages: the cached context, the sidebar, safe rendering.

Nothing here knows about LlamaIndex, Chroma or SQLite: it calls rag_core and renders.
"""
