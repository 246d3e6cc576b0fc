"""Count the bytes one Qwen2 decoder layer saves for backward, per token, on CPU: the per-layer activation term of
rlcompat.doctor.memory (`(9*h + 4*i) * d` bytes per token, h hidden size, i MLP width, d bytes per element).

Tensors saved for backward are caught with torch.autograd.graph.saved_tensors_hooks and counted once per storage;
parameters are left out. Two MLP widths separate the part that grows with h from the part that grows with i.
No GPU needed: what autograd saves does not depend on the device (the attention kernel's extra state aside).

usage: python bench/activation_bytes.py [--attn sdpa|eager] [--seq-len 256]
"""

from __future__ import annotations

import argparse


def saved_bytes_per_layer_token(hidden: int, intermediate: int, attn: str, seq_len: int, layers: int = 2) -> float:
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    vocab = 1024
    config = Qwen2Config(hidden_size=hidden, intermediate_size=intermediate, num_hidden_layers=layers,
                         num_attention_heads=hidden // 64, num_key_value_heads=2, vocab_size=vocab,
                         attn_implementation=attn, use_cache=False)

    def count(n_layers: int) -> int:
        config.num_hidden_layers = n_layers
        torch.manual_seed(0)
        model = Qwen2ForCausalLM(config)
        params = {p.untyped_storage().data_ptr() for p in model.parameters()}
        seen: dict[int, int] = {}

        def pack(t):
            ptr = t.untyped_storage().data_ptr()
            if ptr not in params:
                seen[ptr] = max(seen.get(ptr, 0), t.untyped_storage().nbytes())
            return t

        ids = torch.randint(0, vocab, (1, seq_len))
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            model(input_ids=ids)
        return sum(seen.values())

    # The difference between two depths is exactly what one more layer saves (embedding and head cancel out).
    return (count(layers) - count(layers - 1)) / seq_len


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--attn", default="sdpa", choices=["sdpa", "eager"])
    ap.add_argument("--seq-len", type=int, default=256)
    args = ap.parse_args()
    h, d = 896, 4
    narrow = saved_bytes_per_layer_token(h, 2 * h, args.attn, args.seq_len) / d
    wide = saved_bytes_per_layer_token(h, 8 * h, args.attn, args.seq_len) / d
    per_i = (wide - narrow) / (6 * h)
    per_h = (narrow - per_i * 2 * h) / h
    print(f"{args.attn}: one layer saves {per_h:.2f}*h + {per_i:.2f}*i elements per token "
          f"(rlcompat.doctor.memory uses 9*h + 4*i)")
    print(f"  Qwen2.5-0.5B shape (h=896, i=4864): {(per_h * h + per_i * 4864) / h:.1f} h per token")


if __name__ == "__main__":
    main()
