// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// Holds ETH from its constructor and sends it away via SELFDESTRUCT.
/// Post-Cancun (EIP-6780) the code stays, but the balance still moves to the
/// beneficiary, which is what the transfer extraction must see.
contract SelfDestructor {
    constructor() payable {}

    function destroy(address payable beneficiary) external {
        selfdestruct(beneficiary);
    }
}
