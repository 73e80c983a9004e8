"""Private protobuf code of the gateway (the stored checkpoint format); not part of the contract."""
