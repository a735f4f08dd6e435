// The M10K in true dual-port mode as a black box for Yosys' resource count (see m10k_tdp.txt): Yosys 0.23 has no
// cell for this mode, and the estimate only needs the block's ports (so logic around it is kept) and its count.
(* blackbox *)
module NNACCEL_M10K (A_CLK, A_ADDR, A_WR_DATA, A_WR_EN, A_RD_EN, A_RD_DATA,
                     B_CLK, B_ADDR, B_WR_DATA, B_WR_EN, B_RD_EN, B_RD_DATA);
    parameter A_WIDTH = 20;
    parameter A_ENABLES = 2;
    parameter B_WIDTH = 20;
    parameter B_ENABLES = 2;
    input A_CLK, B_CLK, A_RD_EN, B_RD_EN;
    input [12:0] A_ADDR, B_ADDR;
    input [A_WIDTH-1:0] A_WR_DATA;
    input [B_WIDTH-1:0] B_WR_DATA;
    input [A_ENABLES-1:0] A_WR_EN;
    input [B_ENABLES-1:0] B_WR_EN;
    output [A_WIDTH-1:0] A_RD_DATA;
    output [B_WIDTH-1:0] B_RD_DATA;
endmodule
