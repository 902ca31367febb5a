"""What decides numerics: the curated lists the comparison grades as *error*.

Everything not listed here is still compared: other environment variables are reported as
information, other libraries as warnings. Names are matched exactly (environment) or after
PEP 503 normalisation (libraries).
"""
from __future__ import annotations

import math
import re
from typing import Any, Dict, Optional, Tuple

# name -> (why it matters, value that means "unset")
NUMERIC_ENV: Dict[str, Tuple[str, Optional[str]]] = {
    # CUDA / cuBLAS / cuDNN
    "CUBLAS_WORKSPACE_CONFIG": ("cuBLAS workspace: required for deterministic GEMM", None),
    "CUBLASLT_WORKSPACE_SIZE": ("cuBLASLt workspace size: GEMM algorithm choice", None),
    "CUDA_LAUNCH_BLOCKING": ("synchronous kernel launch", "0"),
    "CUDA_VISIBLE_DEVICES": ("visible devices: device count and kind", None),
    "CUDA_DEVICE_MAX_CONNECTIONS": ("kernel overlap and ordering (Megatron requires 1)", None),
    "CUDA_MODULE_LOADING": ("lazy kernel loading", None),
    "NVIDIA_TF32_OVERRIDE": ("TF32 math forced on/off", None),
    "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE": ("TF32 in cuBLAS", None),
    "CUDNN_DETERMINISTIC": ("cuDNN determinism", None),
    "CUDNN_BENCHMARK": ("cuDNN algorithm autotuning", None),
    "TORCH_CUDNN_V8_API_DISABLED": ("cuDNN v8 API: algorithm choice", None),
    "NVTE_ALLOW_NONDETERMINISTIC_ALGO": ("TransformerEngine non-deterministic kernels", "1"),
    "NVTE_FLASH_ATTN": ("TransformerEngine attention backend", None),
    "NVTE_FUSED_ATTN": ("TransformerEngine attention backend", None),
    "NVTE_UNFUSED_ATTN": ("TransformerEngine attention backend", None),
    # NCCL
    "NCCL_DETERMINISTIC": ("NCCL deterministic reductions", None),
    "NCCL_ALGO": ("NCCL collective algorithm (reduction order)", None),
    "NCCL_PROTO": ("NCCL protocol", None),
    "NCCL_NTHREADS": ("NCCL threads per block", None),
    "NCCL_MIN_NCHANNELS": ("NCCL channel count (reduction split)", None),
    "NCCL_MAX_NCHANNELS": ("NCCL channel count (reduction split)", None),
    "NCCL_P2P_DISABLE": ("NCCL peer-to-peer path", None),
    "NCCL_IB_DISABLE": ("NCCL transport", None),
    "NCCL_NVLS_ENABLE": ("NVLink SHARP in-switch reductions", None),
    "NCCL_COLLNET_ENABLE": ("in-network reductions", None),
    # HCCL / Ascend
    "HCCL_DETERMINISTIC": ("HCCL deterministic reductions", "false"),
    "HCCL_ALGO": ("HCCL collective algorithm (reduction order)", None),
    "HCCL_INTRA_ROCE_ENABLE": ("HCCL intra-node transport", "0"),
    "HCCL_INTRA_PCIE_ENABLE": ("HCCL intra-node transport", "1"),
    "HCCL_OP_EXPANSION_MODE": ("HCCL kernel placement", None),
    "HCCL_BUFFSIZE": ("HCCL buffer size: chunking of reductions", None),
    "ASCEND_LAUNCH_BLOCKING": ("synchronous kernel launch", "0"),
    "ASCEND_RT_VISIBLE_DEVICES": ("visible devices: device count and kind", None),
    "ASCEND_GLOBAL_LOG_LEVEL": ("Ascend logging (can change scheduling)", None),
    "INF_NAN_MODE_ENABLE": ("Ascend INF/NAN mode vs saturation", None),
    "INF_NAN_MODE_FORCE_DISABLE": ("Ascend saturation mode forced", None),
    "ASCEND_OPP_PATH": ("Ascend operator package in use", None),
    "ASCEND_TOOLKIT_HOME": ("CANN toolkit in use", None),
    "ASCEND_HOME_PATH": ("CANN install in use", None),
    "CLOSE_MATMUL_K_SHIFT": ("Ascend matmul accumulation order", None),
    "ACLNN_CACHE_LIMIT": ("aclnn kernel cache", None),
    "TASK_QUEUE_ENABLE": ("torch_npu task queue (launch order)", None),
    "MULTI_STREAM_MEMORY_REUSE": ("torch_npu memory reuse across streams", None),
    # MindSpore
    "MS_DEV_JIT_SYNTAX_LEVEL": ("MindSpore graph syntax level", None),
    "MS_DEV_RUNTIME_CONF": ("MindSpore runtime switches", None),
    "MS_DEV_FORCE_ACL": ("MindSpore operator backend", None),
    "MS_ENABLE_NUMA": ("MindSpore NUMA binding", None),
    "MS_ALLOC_CONF": ("MindSpore allocator", None),
    "MS_SUBMODULE_LOG_v": ("MindSpore logging", None),
    "GRAPH_OP_RUN": ("MindSpore kernel-by-kernel execution", None),
    "MS_DEV_DISABLE_PREBUILD": ("MindSpore kernel prebuild", None),
    # PyTorch / CPU math
    "CUBLAS_ALLOW_TF32": ("TF32 in cuBLAS", None),
    "TORCH_DETERMINISTIC": ("deterministic algorithms", None),
    "PYTORCH_CUDA_ALLOC_CONF": ("CUDA allocator (expandable segments etc.)", None),
    "PYTORCH_NPU_ALLOC_CONF": ("NPU allocator", None),
    "TORCH_NCCL_AVOID_RECORD_STREAMS": ("NCCL stream semantics", None),
    "TORCHINDUCTOR_FORCE_DISABLE_CACHES": ("inductor kernel cache", None),
    "PYTHONHASHSEED": ("Python hash seed (set/dict order)", None),
    "OMP_NUM_THREADS": ("CPU threads: reduction split on CPU", None),
    "MKL_NUM_THREADS": ("MKL threads: reduction split on CPU", None),
    "MKL_CBWR": ("MKL conditional numerical reproducibility", None),
    "OPENBLAS_NUM_THREADS": ("OpenBLAS threads", None),
    "WORLD_SIZE": ("number of ranks", None),
}

# NPU variable <-> GPU variable with the same role, compared across device kinds.
CROSS_DEVICE_ENV: Tuple[Tuple[str, str], ...] = (
    ("HCCL_DETERMINISTIC", "NCCL_DETERMINISTIC"),
    ("HCCL_ALGO", "NCCL_ALGO"),
    ("ASCEND_LAUNCH_BLOCKING", "CUDA_LAUNCH_BLOCKING"),
    ("ASCEND_RT_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"),
)

# Set afresh by every launch or shell: their differences are expected (still listed, as information).
VOLATILE_ENV = frozenset({"MASTER_PORT", "MASTER_ADDR", "TORCHELASTIC_RUN_ID", "TORCHELASTIC_ERROR_FILE",
                          "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_MAX_RESTARTS", "TORCHELASTIC_USE_AGENT_STORE",
                          "GROUP_RANK", "ROLE_RANK", "LOCAL_RANK", "RANK", "OLDPWD", "PWD", "SHLVL", "_",
                          "TMPDIR", "SSH_CLIENT", "SSH_CONNECTION", "SSH_TTY", "TERM", "HOSTNAME"})

KEY_LIBRARIES = frozenset({
    "torch", "torch-npu", "torchvision", "mindspore", "mindspore-ascend", "mindspore-gpu", "msadapter",
    "mindspeed", "mindspeed-llm", "mindformers", "megatron-core", "megatron-lm", "megatron", "deepspeed",
    "transformers", "accelerate", "peft", "datasets", "tokenizers", "safetensors", "numpy", "apex",
    "transformer-engine", "transformer-engine-torch", "flash-attn", "triton", "xformers", "jax", "jaxlib",
    "nvidia-cublas-cu11", "nvidia-cublas-cu12", "nvidia-cudnn-cu11", "nvidia-cudnn-cu12",
    "nvidia-nccl-cu11", "nvidia-nccl-cu12", "nvidia-cuda-runtime-cu12", "te", "op-plugin",
})

# canonical hyperparameter -> aliases seen in launch scripts and yaml files (compared after '-' -> '_').
HYPER_ALIASES: Dict[str, Tuple[str, ...]] = {
    "learning_rate": ("lr", "learningrate", "base_lr", "max_lr"),
    "min_learning_rate": ("min_lr",),
    "batch_size": ("batch", "bs", "batch_size_per_gpu", "per_device_train_batch_size"),
    "micro_batch_size": ("mbs", "micro_bs"),
    "global_batch_size": ("gbs", "total_batch_size"),
    "epochs": ("num_epochs", "max_epochs", "epoch", "num_train_epochs"),
    "train_iters": ("max_steps", "train_steps", "iterations", "num_iterations"),
    "weight_decay": ("wd", "weightdecay"),
    "dropout_rate": ("dropout", "drop_rate", "hidden_dropout"),
    "seed": ("random_seed", "manual_seed"),
    "warmup_steps": ("lr_warmup_iters", "warmup_iters", "num_warmup_steps"),
    "gradient_accumulation_steps": ("grad_accum", "gradient_accumulation"),
    "clip_grad": ("max_grad_norm", "grad_clip", "gradient_clipping"),
    "adam_beta1": ("beta1",),
    "adam_beta2": ("beta2",),
    "adam_eps": ("adam_epsilon", "eps"),
    "residual_dtype": ("fp32_residual_connection",),
    "softmax_compute_dtype": ("attention_softmax_in_fp32",),
}


# Hyperparameters choosing the numeric precision: set on one side only, they are an error (bf16 vs fp16).
PRECISION_FLAGS = frozenset({
    "bf16", "fp16", "fp8", "fp8_format", "fp8_recipe", "fp32", "tf32", "half", "amp", "apex_amp", "fp16_opt_level",
    "mixed_precision", "precision", "params_dtype", "param_dtype", "torch_dtype", "compute_dtype",
    "main_params_dtype", "main_grads_dtype", "accumulate_allreduce_grads_in_fp32", "softmax_compute_dtype",
    "residual_dtype", "fp16_lm_cross_entropy", "bf16_reduce", "grad_reduce_in_bf16",
})


def is_precision(name: str) -> bool:
    """'--bf16', 'training.fp16', 'mixed_precision' (after aliases: 'attention_softmax_in_fp32')."""
    return canonical_hyper(str(name).split(".")[-1]) in PRECISION_FLAGS


def canonical_library(name: str) -> str:
    """PEP 503 normalisation, so 'Torch_NPU' and 'torch-npu' are one library."""
    return re.sub(r"[-_.]+", "-", name).lower()


def canonical_hyper(leaf: str) -> str:
    key = leaf.replace("-", "_").lower()
    for canonical, aliases in HYPER_ALIASES.items():
        if key == canonical or key in aliases:
            return canonical
    return key


def same_value(a: Any, b: Any) -> bool:
    """'1e-4' (shell) equals 0.0001 (yaml); 'true' equals True; lists element by element."""
    if a == b and type(a) == type(b):
        return True
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    if isinstance(a, (list, dict)) or isinstance(b, (list, dict)):
        return False
    sa, sb = _text(a), _text(b)
    if sa == sb:
        return True
    try:
        fa, fb = float(sa), float(sb)
    except ValueError:
        return False
    return fa == fb or (math.isnan(fa) and math.isnan(fb))


def _text(value: Any) -> str:
    if isinstance(value, bool) or str(value).lower() in ("true", "false"):
        return str(value).lower()
    return str(value).strip()
