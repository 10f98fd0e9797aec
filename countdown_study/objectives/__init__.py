"""Pure tensor losses: RLOO, IPO, VCC (report 003). Functions of tensors and frozen configs only.

Wall: imports torch and nothing else of the package.
"""
