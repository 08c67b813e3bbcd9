// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// Passes ETH on with internal calls, so those value transfers exist only in
/// traces (no logs, not visible in the transaction itself).
contract Forwarder {
    function forward(address payable to) external payable {
        (bool ok, ) = to.call{value: msg.value}("");
        require(ok, "forward");
    }

    function split(address payable a, address payable b) external payable {
        uint256 half = msg.value / 2;
        (bool okA, ) = a.call{value: half}("");
        (bool okB, ) = b.call{value: msg.value - half}("");
        require(okA && okB, "split");
    }
}
