// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// Does transfer-looking things and then reverts, so the chain holds mined
/// status-0 transactions (and reverted sub-calls) that must yield no transfers.
contract Reverter {
    event Transfer(address indexed from, address indexed to, uint256 value);

    function boom(address payable to) public payable {
        emit Transfer(address(this), to, msg.value);
        (bool ok, ) = to.call{value: msg.value}("");
        require(ok, "send");
        revert("boom");
    }

    /// Succeeds overall, but the inner boom() frame (with its value call and
    /// log) is reverted; this contract keeps msg.value.
    function tryBoom(address payable to) external payable {
        try this.boom{value: msg.value}(to) {} catch {}
    }

    receive() external payable {}
}
