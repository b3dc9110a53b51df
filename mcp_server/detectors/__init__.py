"""Detectors: classifiers that flag what a document's text does, over the encoders' vectors.

``instructions.py`` scores each sentence with the probability that it is an instruction to the
agent reading it (``InstructionDetector``, with a fake; weights in ``instructions.npz`` beside it,
trained by ``scripts/train_instructions.py``). The model roles (``embedding/registry.py``) load it
over the English embedder; the pipeline flags what it scores (``pipeline/flags.py``).
"""
