"""The stack sections: one module per stack-file key, plus the pydantic base and the scalar types they share."""
