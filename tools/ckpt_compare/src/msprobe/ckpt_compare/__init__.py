"""Compare two Megatron-LM / MindSpeed checkpoints of any parallel layout (``msprobe config_check -c``).

``compare.run(path1, path2, CompareOptions())`` returns a report; ``cli.compare_checkpoints`` is the
``msprobe.config_check`` entry point; ``writer.write_megatron`` writes test/demo checkpoints.
"""
