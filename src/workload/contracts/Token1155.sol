// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// Minimal ERC-1155 with the standard events. Receiver hooks are skipped
/// entirely: the workload only transfers to EOAs.
contract Token1155 {
    mapping(uint256 => mapping(address => uint256)) public balanceOf;
    mapping(address => mapping(address => bool)) public isApprovedForAll;

    event TransferSingle(address indexed operator, address indexed from, address indexed to, uint256 id, uint256 value);
    event TransferBatch(address indexed operator, address indexed from, address indexed to, uint256[] ids, uint256[] values);
    event ApprovalForAll(address indexed account, address indexed operator, bool approved);

    /// One URI for every id, with {id} for the client to fill in (ERC-1155 metadata).
    function uri(uint256) external pure returns (string memory) {
        return "https://tokens.example.invalid/{id}.json";
    }

    function mint(address to, uint256 id, uint256 amount) external {
        balanceOf[id][to] += amount;
        emit TransferSingle(msg.sender, address(0), to, id, amount);
    }

    function setApprovalForAll(address operator, bool approved) external {
        isApprovedForAll[msg.sender][operator] = approved;
        emit ApprovalForAll(msg.sender, operator, approved);
    }

    function safeTransferFrom(address from, address to, uint256 id, uint256 amount, bytes calldata) external {
        _auth(from);
        _move(from, to, id, amount);
        emit TransferSingle(msg.sender, from, to, id, amount);
    }

    function safeBatchTransferFrom(
        address from,
        address to,
        uint256[] calldata ids,
        uint256[] calldata amounts,
        bytes calldata
    ) external {
        require(ids.length == amounts.length, "length");
        _auth(from);
        for (uint256 i = 0; i < ids.length; i++) _move(from, to, ids[i], amounts[i]);
        emit TransferBatch(msg.sender, from, to, ids, amounts);
    }

    function _auth(address from) private view {
        require(msg.sender == from || isApprovedForAll[from][msg.sender], "auth");
    }

    function _move(address from, address to, uint256 id, uint256 amount) private {
        require(balanceOf[id][from] >= amount, "balance");
        balanceOf[id][from] -= amount;
        balanceOf[id][to] += amount;
    }
}
