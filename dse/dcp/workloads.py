"""The layers and template hardware points DCP's data set is drawn from, and which are held out.

Layers (``LAYERS``): the thesis' DQN network (4 layers), the CapsNet's two convolutions (conv1:
1x28x28 -> 256 channels, 9x9, stride 1; PrimaryCaps: 256x20x20 -> 256, 9x9, stride 2) and
fifteen small CNN / ResNet / MobileNet-like shapes (3x3, 1x1, 5x5 and 7x7 convolutions at
strides 1 and 2, a depthwise convolution, dense layers). Input sizes include the padding
(a "same" 3x3 convolution on 16x16 is an 18x18 input). Five of the other shapes are never
trained on (``HELD_OUT_LAYERS``).

Hardware (``TRAIN_HARDWARE``, ``HELD_OUT_HARDWARE``): fp16 template points with the default GB
(108 KiB) and HBM; four for training, each dataflow at least once, and one the predictor never
sees (a 20x20 array, which no training point has, with a 32-word RF under OS, a combination no
training point has). ``DEFAULT_HARDWARE`` (16x16, 64-word RF, row-stationary) is where the
searches run unless told otherwise.

The RTL family (``dse.rtl.dataflow_space``) runs square convolutions and dense layers, no depthwise
ones: its layers (``RTL_TRAIN_LAYERS``, ``RTL_HELD_OUT_LAYERS``) are the same without the two
depthwise shapes and without PrimaryCaps (20,736 products per output position overflow every
weight RAM of the family), plus one more 3x3 convolution. Its hardware points
(``RTL_TRAIN_HARDWARE``, ``RTL_HELD_OUT_HARDWARE``) all have 256 MACs (the widest layers have
256 output channels): the 16x16 binary32 accelerator of the thesis (``RTL_DEFAULT_HARDWARE``),
32 modules x 8 lanes in bfloat16 and 8 x 32 in binary16 with other float-unit latencies for
training, and 64 x 4 in bfloat16 (a shape no training point has) held out.
"""

from nnaccel.dse.rtl.dataflow_space import RtlDataflowSpace
from nnaccel.dse.shared.layer import Layer, LayerType, dqn_layers
from nnaccel.dse.template.dataflow_space import TemplateDataflowSpace
from nnaccel.dse.template.hardware import TemplateHardware
from nnaccel.hw.dqn.config import DqnConfig
from nnaccel.hw.shared.float_format import float_format
from nnaccel.models.shared.input_files import InputError

CAPSNET_LAYERS = (
    Layer.conv(in_channels=1, in_size=28, out_channels=256, kernel=9, name="CAPS_CONV1"),
    Layer.conv(in_channels=256, in_size=20, out_channels=256, kernel=9, stride=2,
               name="CAPS_PRIMARY"),
)

OTHER_LAYERS = (
    Layer.conv(in_channels=3, in_size=34, out_channels=64, kernel=3, name="cifar_stem_3x3"),
    Layer.conv(in_channels=64, in_size=18, out_channels=64, kernel=3, name="res_3x3_64"),
    Layer.conv(in_channels=64, in_size=17, out_channels=128, kernel=3, stride=2,
               name="res_3x3_64_128_s2"),
    Layer.conv(in_channels=64, in_size=16, out_channels=256, kernel=1, name="res_1x1_64_256"),
    Layer.conv(in_channels=128, in_size=16, out_channels=256, kernel=1, stride=2,
               name="res_1x1_128_256_s2"),
    Layer.conv(in_channels=3, in_size=38, out_channels=64, kernel=7, stride=2,
               name="stem_7x7_s2"),
    Layer.conv(in_channels=6, in_size=14, out_channels=16, kernel=5, name="lenet_5x5"),
    Layer(y=18, x=18, r=3, s=3, k=32, c=32, type=LayerType.DEPTHWISE, name="dw_3x3_32"),
    Layer.dense(in_features=512, out_features=10, name="fc_512_10"),
    Layer.dense(in_features=120, out_features=84, name="fc_120_84"),
)

HELD_OUT_LAYERS = (
    Layer.conv(in_channels=128, in_size=10, out_channels=128, kernel=3, name="res_3x3_128"),
    Layer.conv(in_channels=256, in_size=8, out_channels=64, kernel=1, name="res_1x1_256_64"),
    Layer.conv(in_channels=16, in_size=12, out_channels=32, kernel=5, name="conv_5x5_16_32"),
    Layer(y=17, x=17, r=3, s=3, k=64, c=64, type=LayerType.DEPTHWISE, stride=2,
          name="dw_3x3_64_s2"),
    Layer.dense(in_features=1024, out_features=128, name="fc_1024_128"),
)

TRAIN_LAYERS = (*dqn_layers(), *CAPSNET_LAYERS, *OTHER_LAYERS)
LAYERS = (*TRAIN_LAYERS, *HELD_OUT_LAYERS)

DEFAULT_HARDWARE = TemplateDataflowSpace.default_hardware
TRAIN_HARDWARE = (
    DEFAULT_HARDWARE,
    TemplateHardware(pe_x=16, pe_y=16, rf_words=64, dataflow="OS"),
    TemplateHardware(pe_x=12, pe_y=24, rf_words=16, dataflow="WS"),
    TemplateHardware(pe_x=8, pe_y=16, rf_words=8, dataflow="RS"),
)
HELD_OUT_HARDWARE = (TemplateHardware(pe_x=20, pe_y=20, rf_words=32, dataflow="OS"),)



def _no_depthwise(layers):
    return tuple(layer for layer in layers if layer.type != LayerType.DEPTHWISE)


RTL_TRAIN_LAYERS = (*dqn_layers(), CAPSNET_LAYERS[0], *_no_depthwise(OTHER_LAYERS),
                    Layer.conv(in_channels=32, in_size=12, out_channels=48, kernel=3,
                               name="conv_3x3_32_48"))
RTL_HELD_OUT_LAYERS = _no_depthwise(HELD_OUT_LAYERS)
RTL_LAYERS = (*RTL_TRAIN_LAYERS, *RTL_HELD_OUT_LAYERS)

RTL_DEFAULT_HARDWARE = RtlDataflowSpace.default_hardware
RTL_TRAIN_HARDWARE = (
    RTL_DEFAULT_HARDWARE,
    DqnConfig(modules=32, lanes=8, fmt=float_format("bfloat16"), multiplier_latency=1,
              adder_latency=3),
    DqnConfig(modules=8, lanes=32, fmt=float_format("binary16"), multiplier_latency=3,
              adder_latency=1),
)
RTL_HELD_OUT_HARDWARE = (DqnConfig(modules=64, lanes=4, fmt=float_format("bfloat16")),)


def layer_by_name(name):
    """A layer of ``LAYERS`` by name (case-insensitive); ValueError listing the names."""
    for layer in (*LAYERS, *RTL_LAYERS):
        if layer.name.lower() == name.lower():
            return layer
    raise InputError(f"unknown layer {name!r}; known: {', '.join(l.name for l in LAYERS)}")
