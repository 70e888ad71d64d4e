"""``python -m rag_core bench PDF...``: figures for the three costs a user waits on.

- parsing: pages/s with PDFium (what Docent uses) and with pypdf, side by side in one run
  (the ratio is what to compare, since these machines are noisy);
- embedding: chunks/s of the configured embedding on real chunks;
- the LLM: load time, first-token latency and tokens/s on a RAG-sized prompt (``--llm``).

With ``--json`` the last line is one object: ``{"parse": {...}, "embed": {...}, "llm": {...}}``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from llama_index.core.node_parser import SentenceSplitter

from rag_core.settings import DocentSettings, load_settings


def bench_parse(pdfs: list[Path], max_pages: int) -> dict[str, Any]:
    import pypdfium2 as pdfium
    from pypdf import PdfReader

    pages = 0
    t = time.perf_counter()
    texts: list[str] = []
    for p in pdfs:
        pdf = pdfium.PdfDocument(str(p))
        for i in range(min(len(pdf), max_pages)):
            page = pdf[i]
            tp = page.get_textpage()
            texts.append(tp.get_text_bounded())
            tp.close()
            page.close()
            pages += 1
        pdf.close()
    pdfium_s = time.perf_counter() - t
    t = time.perf_counter()
    pypdf_pages = 0
    pypdf_failed = []
    for p in pdfs:
        try:
            reader = PdfReader(str(p))
            if reader.is_encrypted:
                reader.decrypt("")
            for page in reader.pages[:max_pages]:
                page.extract_text()
                pypdf_pages += 1
        except Exception as e:  # pypdf refuses some filings outright
            pypdf_failed.append(f"{p.name}: {type(e).__name__}")
    pypdf_s = time.perf_counter() - t
    pdfium_rate = pages / pdfium_s if pdfium_s else 0.0
    pypdf_rate = pypdf_pages / pypdf_s if pypdf_s else 0.0
    return {
        "files": len(pdfs),
        "pages": pages,
        "pdfium_pages_per_s": round(pdfium_rate, 1),
        "pypdf_pages_per_s": round(pypdf_rate, 1),
        "pdfium_vs_pypdf": round(pdfium_rate / pypdf_rate, 1) if pypdf_rate else None,
        "pypdf_failed": pypdf_failed,
        "_texts": texts,
    }


def bench_embed(settings: DocentSettings, texts: list[str], max_chunks: int) -> dict[str, Any]:
    from rag_core.providers.embeddings import build_embedding

    splitter = SentenceSplitter(chunk_size=settings.chunk_size, chunk_overlap=settings.chunk_overlap)
    chunks: list[str] = []
    for text in texts:
        chunks.extend(splitter.split_text(text))
        if len(chunks) >= max_chunks:
            break
    chunks = chunks[:max_chunks] or ["empty"]
    t = time.perf_counter()
    model = build_embedding(settings)
    load_s = time.perf_counter() - t
    t = time.perf_counter()
    model.get_text_embedding_batch(chunks)
    s = time.perf_counter() - t
    return {
        "model": model.model_name,
        "chunks": len(chunks),
        "chunk_size": settings.chunk_size,
        "load_s": round(load_s, 2),
        "chunks_per_s": round(len(chunks) / s, 1) if s else None,
    }


PROMPT_PASSAGE = (
    "Net sales by category for the three months ended June 25, 2022: iPhone $40,665 million, Mac $7,382 "
    "million, iPad $7,224 million, Wearables, Home and Accessories $8,084 million, Services $19,604 million. "
    "Total net sales were $82,959 million, compared with $81,434 million a year earlier. "
) * 3


def bench_llm(settings: DocentSettings) -> dict[str, Any]:
    from llama_index.core.base.llms.types import ChatMessage, MessageRole

    from rag_core.providers.llm import build_llm

    t = time.perf_counter()
    llm = build_llm(settings)
    if hasattr(llm, "load"):
        llm.load()
    load_s = time.perf_counter() - t
    messages = [
        ChatMessage(
            role=MessageRole.SYSTEM,
            content=f"Answer from this passage only.\n<documents>\n{PROMPT_PASSAGE}\n</documents>",
        ),
        ChatMessage(
            role=MessageRole.USER, content="What were total net sales, and how did iPhone do? Explain briefly."
        ),
    ]
    t = time.perf_counter()
    first = None
    pieces = 0
    text = ""
    for chunk in llm.stream_chat(messages):
        if first is None:
            first = time.perf_counter() - t
        pieces += 1
        text = chunk.message.content or ""
    total = time.perf_counter() - t
    gen_s = total - (first or 0.0)
    return {
        "provider": settings.llm_provider,
        "load_s": round(load_s, 2),
        "first_token_s": round(first or total, 2),
        "total_s": round(total, 2),
        "pieces": pieces,
        "tokens_per_s": round(pieces / gen_s, 1) if gen_s > 0 else None,
        "answer": text[:200],
    }


def run(args: argparse.Namespace) -> int:
    settings = load_settings(data_dir=Path(args.data_dir)) if args.data_dir else load_settings()
    pdfs = sorted(Path(p) for p in args.pdfs) if args.pdfs else []
    result: dict[str, Any] = {}
    texts: list[str] = []
    if pdfs:
        parse = bench_parse(pdfs, args.max_pages)
        texts = parse.pop("_texts")
        result["parse"] = parse
    if not texts:
        texts = [PROMPT_PASSAGE * 20]
    result["embed"] = bench_embed(settings, texts, args.max_chunks)
    if args.llm:
        result["llm"] = bench_llm(settings)
    if args.json:
        print(json.dumps(result, ensure_ascii=False))
    else:
        for section, figures in result.items():
            print(f"[{section}]")
            for k, v in figures.items():
                print(f"  {k}: {v}")
    return 0
