import ImgfsCore
