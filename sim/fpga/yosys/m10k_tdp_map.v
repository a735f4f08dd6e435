// techmap: memory_libmap's $__NNACCEL_M10K_ cells (see m10k_tdp.txt) to the NNACCEL_M10K black box.
module \$__NNACCEL_M10K_ (PORT_A_CLK, PORT_A_ADDR, PORT_A_WR_DATA, PORT_A_WR_EN, PORT_A_RD_EN, PORT_A_RD_DATA,
                          PORT_B_CLK, PORT_B_ADDR, PORT_B_WR_DATA, PORT_B_WR_EN, PORT_B_RD_EN, PORT_B_RD_DATA);
    parameter INIT = 0;             // power-up contents: not needed for the count
    parameter PORT_A_WIDTH = 20;
    parameter PORT_A_WR_EN_WIDTH = 2;
    parameter PORT_B_WIDTH = 20;
    parameter PORT_B_WR_EN_WIDTH = 2;
    input PORT_A_CLK, PORT_B_CLK, PORT_A_RD_EN, PORT_B_RD_EN;
    input [12:0] PORT_A_ADDR, PORT_B_ADDR;
    input [PORT_A_WIDTH-1:0] PORT_A_WR_DATA;
    input [PORT_B_WIDTH-1:0] PORT_B_WR_DATA;
    input [PORT_A_WR_EN_WIDTH-1:0] PORT_A_WR_EN;
    input [PORT_B_WR_EN_WIDTH-1:0] PORT_B_WR_EN;
    output [PORT_A_WIDTH-1:0] PORT_A_RD_DATA;
    output [PORT_B_WIDTH-1:0] PORT_B_RD_DATA;
    NNACCEL_M10K #(.A_WIDTH(PORT_A_WIDTH), .A_ENABLES(PORT_A_WR_EN_WIDTH),
                   .B_WIDTH(PORT_B_WIDTH), .B_ENABLES(PORT_B_WR_EN_WIDTH)) _TECHMAP_REPLACE_ (
        .A_CLK(PORT_A_CLK), .A_ADDR(PORT_A_ADDR), .A_WR_DATA(PORT_A_WR_DATA), .A_WR_EN(PORT_A_WR_EN),
        .A_RD_EN(PORT_A_RD_EN), .A_RD_DATA(PORT_A_RD_DATA),
        .B_CLK(PORT_B_CLK), .B_ADDR(PORT_B_ADDR), .B_WR_DATA(PORT_B_WR_DATA), .B_WR_EN(PORT_B_WR_EN),
        .B_RD_EN(PORT_B_RD_EN), .B_RD_DATA(PORT_B_RD_DATA));
endmodule
