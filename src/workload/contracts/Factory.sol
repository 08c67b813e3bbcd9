// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// Deployed by Factory; keeps whatever value its creator forwarded.
contract Child {
    address public immutable creator;

    constructor() payable {
        creator = msg.sender;
    }
}

/// Creates children with CREATE and CREATE2 so traces contain nested create
/// frames (optionally value-carrying).
contract Factory {
    event Deployed(address indexed child, bytes32 salt, bool create2);

    function deploy() external payable returns (address child) {
        child = address(new Child{value: msg.value}());
        emit Deployed(child, bytes32(0), false);
    }

    function deploy2(bytes32 salt) external payable returns (address child) {
        child = address(new Child{salt: salt, value: msg.value}());
        emit Deployed(child, salt, true);
    }
}
