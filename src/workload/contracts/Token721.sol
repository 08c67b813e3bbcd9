// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// Minimal ERC-721: mint, approve, transferFrom. No safeTransfer/receiver hooks.
/// Metadata on chain: tokenURI is a data: URI holding JSON, as on-chain collections do.
contract Token721 {
    string public constant name = "Workload Tokens";
    string public constant symbol = "WLT";
    mapping(uint256 => address) public ownerOf;
    mapping(address => uint256) public balanceOf;
    mapping(uint256 => address) public getApproved;

    event Transfer(address indexed from, address indexed to, uint256 indexed tokenId);
    event Approval(address indexed owner, address indexed approved, uint256 indexed tokenId);

    function tokenURI(uint256 id) external view returns (string memory) {
        require(ownerOf[id] != address(0), "not minted");
        return string.concat('data:application/json,{"name":"WLT ', _decimal(id), '"}');
    }

    function _decimal(uint256 v) private pure returns (string memory) {
        if (v == 0) return "0";
        uint256 digits;
        for (uint256 x = v; x != 0; x /= 10) digits++;
        bytes memory out = new bytes(digits);
        for (; v != 0; v /= 10) out[--digits] = bytes1(uint8(48 + (v % 10)));
        return string(out);
    }

    function mint(address to, uint256 id) external {
        require(ownerOf[id] == address(0), "minted");
        ownerOf[id] = to;
        balanceOf[to] += 1;
        emit Transfer(address(0), to, id);
    }

    function approve(address spender, uint256 id) external {
        require(ownerOf[id] == msg.sender, "owner");
        getApproved[id] = spender;
        emit Approval(msg.sender, spender, id);
    }

    function transferFrom(address from, address to, uint256 id) external {
        require(ownerOf[id] == from, "from");
        require(msg.sender == from || msg.sender == getApproved[id], "auth");
        delete getApproved[id];
        ownerOf[id] = to;
        balanceOf[from] -= 1;
        balanceOf[to] += 1;
        emit Transfer(from, to, id);
    }
}
