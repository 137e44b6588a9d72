"""The speaker encoder: weights, ONNX graphs (CAM++), their cache, voice-print embeddings."""
