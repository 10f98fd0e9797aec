"""Pure tensor losses: RLOO, IPO (later VCC). Functions of tensors and frozen configs only.

Wall: imports torch and nothing else of the package.
"""
