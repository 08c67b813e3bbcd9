// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// Emits logs whose topic0 is the ERC-20/721 Transfer signature but whose shape
/// matches neither standard, so decoders must skip them without crashing.
contract OddLogger {
    bytes32 private constant TRANSFER = keccak256("Transfer(address,address,uint256)");

    /// Three logs: [topic0] + data, [topic0, from] + data, [topic0, from, to] + no data.
    function emitOdd() external {
        bytes32 from = bytes32(uint256(uint160(msg.sender)));
        bytes32 to = bytes32(uint256(uint160(address(this))));
        bytes32 topic = TRANSFER; // inline assembly cannot read non-literal constants
        assembly {
            mstore(0, 1234)
            // topic0 only, with a 32-byte data word
            log1(0, 32, topic)
            // 2 topics, 32-byte data word
            log2(0, 32, topic, from)
            // 3 topics (ERC-20 shape) but empty data
            log3(0, 0, topic, from, to)
        }
    }
}
